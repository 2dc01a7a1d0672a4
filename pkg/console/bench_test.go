package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/console"
	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/request"
)

// seedHistory gives a schema a long history: 1,000,000 messages (one in a thousand DEAD), 20,000
// flights and 1,000,000 events (50 versions per flight), as a year of an airport would.
func seedHistory(b *testing.B, db *testdb.DB) {
	b.Helper()
	for _, stmt := range []string{
		`INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, msg_type, msg_styp,
		        identity_key, received_at, enqueued_at, finished_at)
		 SELECT g, '<MSG><META><TYPE>FLOP</TYPE><STYP>STND</STYP></META><FLOP><FLID>' || (g % 20000 + 1) || '</FLID><STND>' || (g % 90 + 101) || '</STND></FLOP></MSG>',
		        sha256(g::text::bytea),
		        CASE WHEN g % 1000 = 0 THEN 'DEAD' ELSE 'SUCCEEDED' END,
		        CASE WHEN g % 1000 = 0 THEN 'CODEC_ERROR' END,
		        CASE WHEN g % 1000 = 0 THEN 'decode STND' END,
		        1, 'FLOP', 'STND', 'FLOP:' || g, now()::timestamp, now() - interval '1 day', now() - interval '1 day'
		   FROM generate_series(1, 1000000) g`,
		`INSERT INTO flight (flid, alcd, flno, mvin, operation_day, stnd, state_version, last_msg_id, created_at, updated_at)
		 SELECT g, 'CA', (1000 + g)::text, 'A', date '2026-03-15' + (g % 365), (g % 90 + 101)::text, 50, 980000 + g, now(), now()
		   FROM generate_series(1, 20000) g`,
		`INSERT INTO msg_event (target, partition_key, event_type, state_version, msg_id, payload, status, created_at, sent_at)
		 SELECT CASE WHEN g % 2 = 0 THEN 'KAFKA:msg' ELSE 'KAFKA:schd' END, (g % 20000 + 1)::text, 'UPSERT', g / 20000 + 1, g,
		        jsonb_build_object('flid', g % 20000 + 1, 'stnd', (g % 90 + 101)::text, 'version', g / 20000 + 1), 'SENT', now(), now()
		   FROM generate_series(1, 1000000) g`,
		`UPDATE inbox_cursor SET watermark = 1000000`,
		`INSERT INTO leader_lease SELECT r, 1, 'bench', 0, now(), now() FROM unnest(ARRAY['ingest','processor','dispatcher','jobs']) r`,
		`ANALYZE`,
	} {
		_, err := db.Pool.Exec(ctx, stmt)
		require.NoError(b, err)
	}
}

// BenchmarkPages renders each page over seedHistory's long history; `make bench` runs it (the
// goal and the figures: docs/console.md).
func BenchmarkPages(b *testing.B) {
	db := testdb.New(b)
	seedHistory(b, db)
	ob, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute})
	require.NoError(b, err)
	rcfg := request.Config{Location: time.UTC}
	envconf.Defaults(&rcfg)
	reqs, err := request.NewStore(db.Pool, rcfg)
	require.NoError(b, err)
	var tokens httpauth.Clients
	require.NoError(b, tokens.UnmarshalText(fmt.Appendf(nil, "op:read+operate:%x", httpauth.Hash(operatorToken))))
	c, err := console.New(console.Deps{Pool: db.Pool, Outbox: ob, Requests: reqs, Log: zerolog.Nop(),
		Config: consoleconf.Config{Tokens: tokens, SessionKey: strings.Repeat("k", 32), SessionTTL: time.Hour, Refresh: 10 * time.Second}})
	require.NoError(b, err)
	h := c.Handler()
	login := httptest.NewRecorder()
	h.ServeHTTP(login, httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("token="+operatorToken)).WithContext(ctx))
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("token="+operatorToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	login = httptest.NewRecorder()
	h.ServeHTTP(login, req)
	cookies := login.Result().Cookies()
	require.Len(b, cookies, 2, "the page and the action cookie")
	for _, p := range []struct{ name, path string }{
		{"pipeline", "/"},
		{"flight-search", "/flights?q=CA11234&day="},
		{"flight", "/flights/10000"},
		{"message", "/messages/500000"},
		{"dead-message", "/messages/1000"},
		{"dead-letters", "/dead?class=CODEC_ERROR"},
		{"dead-letters-all", "/dead"},
		{"requests", "/requests"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodGet, p.path, nil)
				r.AddCookie(cookies[0])
				r.AddCookie(cookies[1])
				h.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK && rec.Code != http.StatusSeeOther {
					b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
