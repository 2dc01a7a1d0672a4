package ingest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/sis"
)

// CompatPattern is the compat entry's route (obs.Server.Handle).
const CompatPattern = "POST /cminmsgs/send"

// maxXMLDepth bounds element nesting in a compat body (SIS messages nest about five deep).
const maxXMLDepth = 64

// Inserter is what the compat entry needs from the mailbox (a *mailbox.Mailbox).
type Inserter interface {
	Insert(ctx context.Context, msg mailbox.NewMessage) (int64, error)
}

var _ Inserter = (*mailbox.Mailbox)(nil)

// CompatConfig tunes the compat entry. Shadow, Location and DBTimeout are the process's
// (MSGX_SHADOW, MSGX_AIRPORT_TZ, MSGX_DB_TIMEOUT), set by the binary; zero fields with a default
// take it.
type CompatConfig struct {
	Enabled   bool           `envconfig:"MSGX_COMPAT_ENTRY" default:"true" desc:"ingest: serve POST /cminmsgs/send (inserts into the mailbox)"`
	MaxBody   int64          `envconfig:"MSGX_HTTP_MAX_BODY" default:"1048576" desc:"ingest: maximum body of POST /cminmsgs/send in bytes (larger → 413)"`
	Shadow    bool           // refuse every write with 503
	Location  *time.Location // airport time zone: DATE_RECEIVED is written as its wall clock
	DBTimeout time.Duration  `default:"10s"` // bounds the mailbox insert and the PostgreSQL enqueue each
}

// Validate reports every bad value, one line each.
func (c CompatConfig) Validate() error {
	var p envconf.Problems
	if c.MaxBody < 1024 || c.MaxBody > 16<<20 {
		p.Add("MSGX_HTTP_MAX_BODY", "must be between 1024 and 16777216 bytes (MEDIUMTEXT), got %d", c.MaxBody)
	}
	return p.Err()
}

// Compat serves POST /cminmsgs/send (docs/spec.md §4): it drops a legacy client's message into the
// mailbox and enqueues the new id with its raw copy. It runs on every replica, leader or not:
// the enqueue lands above W (INV-4) and conflicts harmlessly with the poller's.
type Compat struct {
	cfg     CompatConfig
	mailbox Inserter
	db      DB
	clock   clock.Clock
	metrics *Metrics
	log     zerolog.Logger
}

// NewCompat returns the handler.
func NewCompat(cfg CompatConfig, mb Inserter, db DB, clk clock.Clock, m *Metrics, log zerolog.Logger) *Compat {
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	envconf.FillZero(&cfg)
	return &Compat{cfg: cfg, mailbox: mb, db: db, clock: clk, metrics: m, log: log.With().Str("stage", "compat").Logger()}
}

func (c *Compat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code, body := c.serve(w, r)
	c.metrics.compat.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if code == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close") // do not read the rest of an oversized body
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// serve returns the status and the plain-text body: the new id, or the reason of a refusal.
func (c *Compat) serve(w http.ResponseWriter, r *http.Request) (int, string) {
	if c.cfg.Shadow {
		return http.StatusServiceUnavailable, "shadow mode (MSGX_SHADOW=true): msgx writes nothing to the mailbox; send to the live system\n"
	}
	if reason := checkMediaType(r.Header.Get("Content-Type")); reason != "" {
		return http.StatusUnsupportedMediaType, reason + "\n"
	}
	tooLarge := fmt.Sprintf("body larger than %d bytes\n", c.cfg.MaxBody)
	if r.ContentLength > c.cfg.MaxBody {
		return http.StatusRequestEntityTooLarge, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, c.cfg.MaxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return http.StatusRequestEntityTooLarge, tooLarge
		}
		return http.StatusBadRequest, "reading the body: " + err.Error() + "\n"
	}
	if len(body) == 0 {
		return http.StatusBadRequest, "empty body: send the raw SIS XML message\n"
	}
	if err := checkXML(body); err != nil {
		return http.StatusBadRequest, "not a well-formed XML message: " + err.Error() + "\n"
	}

	text := string(body)
	received := c.clock.Now().In(c.cfg.Location)
	sub := subsystem(body)
	ictx, cancel := context.WithTimeout(r.Context(), c.cfg.DBTimeout)
	id, err := c.mailbox.Insert(ictx, mailbox.NewMessage{Text: text, Received: received, Subsystem: sub})
	cancel()
	if err != nil {
		c.log.Error().Err(err).Msg("compat: mailbox insert failed; answered 503")
		return http.StatusServiceUnavailable, "mailbox unavailable: message not stored; retry later\n"
	}
	// The mailbox row exists: from here on the answer is 200. If the enqueue fails the poller
	// enqueues the row when W reaches it.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), c.cfg.DBTimeout)
	inserted, err := compatEnqueue(ectx, c.db, id, text, clock.WallClock(received, nil), c.clock.Now())
	cancel()
	switch {
	case err != nil:
		c.log.Warn().Err(err).Int64("msg_id", id).Msg("compat: enqueue failed after the mailbox insert; the poller will enqueue it")
	case inserted:
		c.metrics.enqueued.WithLabelValues("compat").Inc()
	}
	c.log.Info().Int64("msg_id", id).Str("client", httpauth.ClientName(r.Context())).Int("bytes", len(body)).Str("type", sub.Type).Str("styp", sub.Subtype).Msg("compat: message stored in the mailbox")
	return http.StatusOK, strconv.FormatInt(id, 10)
}

// checkMediaType accepts application/xml, text/xml and text/plain with charset utf-8 (or none,
// meaning utf-8). It returns the reason of a refusal, or "".
func checkMediaType(ct string) string {
	if ct == "" {
		return "missing Content-Type: use application/xml, text/xml or text/plain with charset=utf-8"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "bad Content-Type " + strconv.Quote(ct)
	}
	switch mt {
	case "application/xml", "text/xml", "text/plain":
	default:
		return "unsupported media type " + strconv.Quote(mt) + ": use application/xml, text/xml or text/plain"
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return "unsupported charset " + strconv.Quote(cs) + ": only utf-8"
	}
	return ""
}

// subsystem maps a message's META, as pkg/sis reads it (nothing when it did not reach it), to the
// CMINMSGS_SUBSYSTEM_* columns. A value that does not fit its column is left NULL rather than
// cut: the raw text keeps it, and the processor decides.
func subsystem(body []byte) mailbox.Subsystem {
	msg, _ := sis.DecodePartial(body, sis.Options{MaxBytes: len(body)})
	if msg == nil {
		return mailbox.Subsystem{}
	}
	m := msg.Meta
	fit := func(s string) string {
		if utf8.RuneCountInString(s) > 4 {
			return ""
		}
		return s
	}
	s := mailbox.Subsystem{Name: fit(m.SNDR), Type: fit(m.TYPE), Subtype: fit(m.STYP)}
	if n, err := strconv.ParseInt(m.SEQN, 10, 64); err == nil && n >= -8388608 && n <= 8388607 {
		s.Sequence, s.HasSequence = n, true
	}
	if t, err := time.Parse("20060102150405", m.DTTMRaw); err == nil {
		s.DateSent = t
	}
	return s
}

// checkXML reports whether body is one well-formed UTF-8 XML document (one root element, nothing
// but whitespace, comments and processing instructions around it, no DOCTYPE, nesting at most
// maxXMLDepth). It does not validate the SIS contract.
func checkXML(body []byte) error {
	if !utf8.Valid(body) {
		return errors.New("not valid UTF-8")
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return errors.New("content after the root element")
				}
			}
			depth++
			if depth > maxXMLDepth {
				return fmt.Errorf("elements nested deeper than %d", maxXMLDepth)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && strings.Trim(string(t), " \t\r\n\ufeff") != "" {
				return errors.New("text outside the root element")
			}
		case xml.Directive:
			return errors.New("DOCTYPE and other declarations are not accepted")
		}
	}
	if roots == 0 {
		return errors.New("no root element")
	}
	return nil
}
