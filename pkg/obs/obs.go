// Package obs serves each binary's operational HTTP surface — /healthz (process alive and, when
// the binary sets a liveness check, its stage loop ticking), /readyz (dependencies reachable,
// leader or standby; 503 once draining for shutdown) and /metrics (Prometheus, injected registry) — on
// its own listener, and builds the zerolog root logger and its non-blocking output (LogOutput). The same Server type serves ingest's API
// on another listener (NewHandlerServer), so that the monitoring network never reaches the API.
package obs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/buildinfo"
)

// NewLogger returns the JSON root logger with the binary's component name. A binary passes its
// LogOutput (stderr behind a bounded queue), so that logging never blocks the work.
func NewLogger(w io.Writer, level, component string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("component", component).Logger()
}

// NewRegistry returns a registry with the Go runtime and process collectors, the build info and
// extra (a binary's LogOutput.Dropped).
func NewRegistry(extra ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	reg.MustRegister(buildInfo(buildinfo.Read()))
	return reg
}

// buildInfo is the gauge msgx_build_info{version,revision,go_version} 1 of this binary's build.
func buildInfo(in buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "msgx_build_info",
		Help: "Always 1; the labels name the binary's build (module version, VCS revision, Go version).",
	}, []string{"version", "revision", "go_version"})
	g.WithLabelValues(in.Version, in.Revision, in.GoVersion).Set(1)
	return g
}

// Check is one readiness dependency.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
	// Informational checks are reported in /readyz but do not make the instance unready: the
	// instance still serves what does not need the dependency (ingest's read API without MySQL).
	Informational bool
}

// Server is one HTTP listener of a binary: the ops endpoints (NewServer) or the API
// (NewHandlerServer).
type Server struct {
	addr    string
	mux     *http.ServeMux
	handler http.Handler
	checks  []Check
	role    func() (leader bool, epoch int64)
	named   string // SetRole's
	log     zerolog.Logger
	timeout time.Duration

	mu       sync.Mutex
	listener net.Listener
	live     func() error // nil: alive while the process serves
	draining atomic.Bool
}

// NewServer builds the server. role reports leadership for /readyz.
func NewServer(addr string, reg *prometheus.Registry, checks []Check, role func() (bool, int64), readTimeout time.Duration, log zerolog.Logger) *Server {
	s := &Server{addr: addr, mux: http.NewServeMux(), checks: checks, role: role, log: log, timeout: readTimeout}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.handler = s.mux
	return s
}

// Handle mounts an extra handler on the ops listener (the console's pages, which share the ops
// address; ingest's API has its own listener, NewHandlerServer). Only for servers from NewServer.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeProfiles mounts Go's profiles (net/http/pprof) under /debug/pprof/ (MSGX_PPROF).
func (s *Server) ServeProfiles() {
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// NewHandlerServer serves h alone on addr (ingest's API listener).
func NewHandlerServer(addr string, h http.Handler, readTimeout time.Duration, log zerolog.Logger) *Server {
	return &Server{addr: addr, handler: h, log: log, timeout: readTimeout}
}

// SetRole makes /readyz name what the process is instead of leader or standby, for a binary
// that elects no leader (the console). Call before Run.
func (s *Server) SetRole(name string) { s.named = name }

// SetLiveness makes /healthz answer 503 with live's error while it fails (pkg/daemon: a stage
// loop of the leader stopped ticking). Call before Run.
func (s *Server) SetLiveness(live func() error) { s.live = live }

// Drain makes /readyz answer 503 from now on: the process is shutting down, and Services stop
// routing to it while it still serves (pkg/daemon waits MSGX_SHUTDOWN_DRAIN, then stops).
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.live != nil {
		if err := s.live(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "unhealthy: "+err.Error()+"\n")
			return
		}
	}
	_, _ = io.WriteString(w, "ok\n")
}

type readiness struct {
	Ready    bool              `json:"ready"`
	Draining bool              `json:"draining,omitempty"`
	Role     string            `json:"role"`
	Epoch    int64             `json:"epoch,omitempty"`
	Checks   map[string]string `json:"checks"`
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := readiness{Ready: true, Role: "standby", Checks: map[string]string{}}
	if s.named != "" {
		out.Role = s.named
	} else if leader, epoch := s.role(); leader {
		out.Role, out.Epoch = "leader", epoch
	}
	if s.draining.Load() {
		out.Ready, out.Draining = false, true
	}
	for _, c := range s.checks {
		if err := c.Fn(ctx); err != nil && c.Informational {
			out.Checks[c.Name] = "degraded: " + err.Error()
		} else if err != nil {
			out.Ready = false
			out.Checks[c.Name] = err.Error()
		} else {
			out.Checks[c.Name] = "ok"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if !out.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Addr returns the bound address once Run has started listening ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Listen binds the address; Run serves on it. Split so callers learn the port (":0" in tests).
func (s *Server) Listen() error {
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.addr, err)
	}
	s.mu.Lock()
	s.listener = l
	s.mu.Unlock()
	return nil
}

// Run serves until ctx ends, then shuts down within shutdownTimeout.
func (s *Server) Run(ctx context.Context, shutdownTimeout time.Duration) error {
	if s.Addr() == "" {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       s.timeout,
		WriteTimeout:      s.timeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.listener) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", err)
	}
	return nil
}
