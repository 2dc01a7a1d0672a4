// Package readapi serves ingest's read API (docs/spec.md §11): the current full state of a flight, and
// of every flight of an operation day, as the JSON msgx publishes on msgx.flight.state (package
// flight's State.AppendJSONIn, MAFL and instants included). It reads PostgreSQL only, in read-only
// transactions, so it runs on every ingest replica, leader or standby.
//
//	GET /flights/{flid}            200 the state (ETag "<state_version>"), 304, 400, 404
//	GET /all/flights?day=YYYY-MM-DD 200 a JSON array of the day's states by FLID (streamed), 400
//	GET /contract/{name}            200 a document of the consumer contract (docs/contract), 404
//
// A DELETED flight is still served (200, "state":"DELETED") until the history sweep purges it;
// after the purge it is unknown (404). docs/api.md has examples.
package readapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/docs"
	"github.com/msgx/msgx/pkg/flightstore"
)

// The routes the Handler serves (obs.Server.Handle); mount it at each of Patterns.
const (
	FlightPattern   = "GET /flights/{flid}"
	DayPattern      = "GET /all/flights"
	ContractPattern = "GET /contract/{name...}"
)

// Patterns lists every route of the read API.
var Patterns = []string{FlightPattern, DayPattern, ContractPattern}

// DefaultChunk is how many flights a day listing loads per statement.
const DefaultChunk = 500

// Config tunes the read API.
type Config struct {
	DBTimeout time.Duration // bounds each request's database work (MSGX_DB_TIMEOUT)
	Chunk     int           // flights per flightstore.Load in a day listing (DefaultChunk)
	// Location is the airport's zone (MSGX_AIRPORT_TZ), in which the states' wall-clock times
	// name the instants served beside them; UTC when nil.
	Location *time.Location
}

// DB is what the read API needs from PostgreSQL (a *pgxpool.Pool). Every request reads in one
// flightstore.ReadOnly transaction: one snapshot for the whole answer, no writes.
type DB = flightstore.Beginner

// Handler serves both routes; it dispatches on the pattern the ServeMux matched.
type Handler struct {
	cfg Config
	db  DB
	log zerolog.Logger
}

// New returns the handler.
func New(cfg Config, db DB, log zerolog.Logger) *Handler {
	if cfg.DBTimeout <= 0 {
		cfg.DBTimeout = 10 * time.Second
	}
	if cfg.Chunk <= 0 {
		cfg.Chunk = DefaultChunk
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	return &Handler{cfg: cfg, db: db, log: log.With().Str("stage", "readapi").Logger()}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Pattern {
	case FlightPattern:
		h.flight(w, r)
	case DayPattern:
		h.day(w, r)
	case ContractPattern:
		contract(w, r)
	default:
		http.NotFound(w, r)
	}
}

// flight serves GET /flights/{flid}.
func (h *Handler) flight(w http.ResponseWriter, r *http.Request) {
	flid, err := parseFLID(r.PathValue("flid"))
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DBTimeout)
	defer cancel()
	s, err := flightstore.Read(ctx, h.db, flid)
	if err != nil {
		h.unavailable(w, r, err, zerolog.Dict().Int64("flid", flid))
		return
	}
	if s == nil {
		plain(w, http.StatusNotFound, fmt.Sprintf("no flight %d", flid))
		return
	}
	etag := `"` + strconv.FormatInt(s.Version, 10) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if noneMatch(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, s.AppendJSONIn(make([]byte, 0, 4096), h.cfg.Location))
}

// contract serves GET /contract/{name}: a JSON Schema, the AsyncAPI document or an example
// value of docs/contract, as committed (docs/events.md, "Machine-readable").
func contract(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := fs.ReadFile(docs.Contract, path.Join("contract", name))
	if err != nil || !fs.ValidPath(name) || !strings.HasSuffix(name, ".json") {
		plain(w, http.StatusNotFound, fmt.Sprintf("no contract document %q (asyncapi.json, msgx.flight.state.value.schema.json, …)", name))
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, b)
}

// day serves GET /all/flights?day=YYYY-MM-DD: the day's FLIDs in one statement, their states
// in chunks of cfg.Chunk, all in one snapshot, streamed: each chunk is written (and flushed) as
// soon as it is loaded, so memory holds one chunk, never the whole day. A failure before the
// first byte is a 503; a failure midway aborts the response (the connection is cut without the
// closing chunk), so a client never takes a truncated array for a whole day.
func (h *Handler) day(w http.ResponseWriter, r *http.Request) {
	day, err := parseDay(r.URL.Query()["day"])
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DBTimeout)
	defer cancel()
	started := false
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 64<<10)
	err = pgx.BeginTxFunc(ctx, h.db, flightstore.ReadOnly, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, dayFlidsSQL, day)
		flids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("list the flights of %s: %w", day, err)
		}
		buf = append(buf, '[')
		n := 0
		for chunk := range slices.Chunk(flids, h.cfg.Chunk) {
			l, err := flightstore.Load(ctx, tx, chunk)
			if err != nil {
				return err
			}
			for _, id := range chunk {
				s := l.States[id]
				if s == nil { // cannot happen in one snapshot; never emit a hole
					continue
				}
				if n > 0 {
					buf = append(buf, ',')
				}
				buf = s.AppendJSONIn(buf, h.cfg.Location)
				n++
			}
			if !started {
				started = true
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.Header().Set("Cache-Control", "no-cache")
				w.WriteHeader(http.StatusOK)
			}
			if _, err := w.Write(buf); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			buf = buf[:0]
			_ = rc.Flush()
		}
		buf = append(buf, ']')
		return nil
	})
	if err != nil && started {
		if r.Context().Err() == nil {
			h.log.Error().Err(err).Str("day", day).Msg("readapi: day listing failed midway; response aborted")
		}
		panic(http.ErrAbortHandler) // cut the connection: the array stays visibly unterminated
	}
	if err != nil {
		h.unavailable(w, r, err, zerolog.Dict().Str("day", day))
		return
	}
	if !started {
		w.Header().Set("Cache-Control", "no-cache")
		writeJSON(w, buf)
		return
	}
	_, _ = w.Write(buf)
}

// unavailable answers a database failure or timeout with 503 (the client may retry) and logs it,
// unless the client went away.
func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, err error, ids *zerolog.Event) {
	if r.Context().Err() != nil {
		return // the client is gone: nobody reads the answer
	}
	reason := "database unavailable; retry later"
	if errors.Is(err, context.DeadlineExceeded) {
		reason = fmt.Sprintf("database did not answer within %s (MSGX_DB_TIMEOUT); retry later", h.cfg.DBTimeout)
	}
	h.log.Error().Err(err).Dict("request", ids).Str("path", r.URL.Path).Msg("readapi: read failed; answered 503")
	w.Header().Set("Retry-After", "1")
	plain(w, http.StatusServiceUnavailable, reason)
}

// maxFLIDDigits is the length of the largest bigint, 9223372036854775807.
const maxFLIDDigits = 19

// parseFLID accepts a positive decimal integer that fits PostgreSQL's bigint (the FLID column).
func parseFLID(s string) (int64, error) {
	bad := errors.New("FLID must be a positive decimal integer of at most 19 digits")
	if s == "" || len(s) > maxFLIDDigits || strings.Trim(s, "0123456789") != "" {
		return 0, bad
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, bad
	}
	return n, nil
}

// parseDay accepts exactly one day=YYYY-MM-DD (a real calendar day, year 1 to 9999).
func parseDay(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", errors.New("missing day: use ?day=YYYY-MM-DD")
	case 1:
	default:
		return "", errors.New("day given more than once: use one ?day=YYYY-MM-DD")
	}
	s := values[0]
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Format(time.DateOnly) != s || t.Year() < 1 {
		return "", errors.New("bad day: use YYYY-MM-DD, e.g. ?day=2026-12-02")
	}
	return s, nil
}

// noneMatch reports whether an If-None-Match header matches etag (RFC 9110 §13.1.2: weak
// comparison, a list of tags, or "*" for any current representation).
func noneMatch(headers []string, etag string) bool {
	for _, h := range headers {
		for tag := range strings.SplitSeq(h, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// plain answers code with a one-line plain-text reason.
func plain(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, reason+"\n")
}
