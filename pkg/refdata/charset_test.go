package refdata_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/refdata"
	"github.com/msgx/msgx/pkg/sis"
)

// chineseCity is one CITY ADD declaring encoding decl, in the bytes of cs (nil: UTF-8).
type chineseCity struct {
	decl string
	cs   encoding.Encoding
	itcd string
	name string
}

func (c chineseCity) text(seqn int) string {
	return `<?xml version="1.0" encoding="` + c.decl + `"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>` + strconv.Itoa(seqn) + `</SEQN><DTTM>20261202080000</DTTM><TYPE>CITY</TYPE><STYP>ADD</STYP></META>
<RECS>1</RECS><CITY><ITCD>` + c.itcd + `</ITCD><CNAM>` + c.itcd + `</CNAM><CNMC>` + c.name + `</CNMC><ABBR CODE="ABR2">` + string([]rune(c.name)[:1]) + `</ABBR></CITY></MSG>`
}

// chinesePipeline runs ingest and the processor (reference lists only) over the mailbox until
// both are idle.
func chinesePipeline(t *testing.T, db *testdb.DB, dsn string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at)
		VALUES ('ingest', 1, 'test', 0, $1, $1), ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	box, err := mailbox.Open(dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	clk := clock.NewFake(t0)
	ing, err := ingest.New(ingest.Config{PollInterval: time.Millisecond, ClaimBatch: 10, MaxCommitDelay: time.Minute,
		ReprobeWindow: time.Hour, ReprobeEvery: time.Minute, DBTimeout: 30 * time.Second},
		ingest.Deps{DB: db.Pool, Mailbox: box, Fence: leader.Lease{Role: "ingest", Epoch: 1}, Clock: clk,
			Metrics: ingest.NewMetrics(prometheus.NewRegistry(), clk), Log: zerolog.Nop()})
	require.NoError(t, err)
	for progressed := true; progressed; {
		progressed, err = ing.Step(ctx)
		require.NoError(t, err)
	}
	p := processor.New(processor.Config{Batch: 10, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: time.Minute, IdlePoll: time.Millisecond, Location: time.UTC, IdentityWindow: 24 * time.Hour},
		db.Pool, map[sis.Kind]processor.Handler{sis.KindRefList: refdata.Handler{}}, box, clk, nil, zerolog.Nop())
	for range 100 {
		res, err := p.Step(ctx, leader.Lease{Role: "processor", Epoch: 1})
		require.NoError(t, err)
		if res.Idle || !res.WaitUntil.IsZero() {
			break
		}
	}
}

// requireNames checks that every message SUCCEEDED and ref_master holds each city's name
// (and its one-character abbreviation) exactly.
func requireNames(t *testing.T, db *testdb.DB, cities []chineseCity) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT msg_id, status || ' ' || COALESCE(error_class, '') || ' ' || COALESCE(reason, '') FROM proc_state`)
	require.NoError(t, err)
	var (
		id     int64
		status string
	)
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		n++
		require.Contains(t, status, "SUCCEEDED", "message %d", id)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(cities), n)
	for _, c := range cities {
		var name, abbr string
		require.NoError(t, db.Pool.QueryRow(ctx,
			`SELECT fields->>'CNMC', fields::text FROM ref_master WHERE rtype = 'CITY' AND rkey = $1`, c.itcd).Scan(&name, &abbr))
		require.Equal(t, c.name, name, "%s declared %s", c.itcd, c.decl)
		require.Contains(t, abbr, string([]rune(c.name)[:1]))
	}
}

// TestChineseMailbox: a mailbox table in charset gbk with GB2312-, GBK- and GB18030-declared
// lists (the server hands msgx UTF-8): every message SUCCEEDED and ref_master holds the names
// exactly. 镕 is in GBK but not in GB2312, as AODBs declaring GB2312 write it.
func TestChineseMailbox(t *testing.T) {
	t.Parallel()
	db, mb := testdb.New(t), mailboxtest.New(t)
	_, err := mb.SQL.Exec(`ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG mediumtext CHARACTER SET gbk NOT NULL`)
	require.NoError(t, err)
	cities := []chineseCity{
		{decl: "GB2312", itcd: "SHA", name: "上海"},
		{decl: "GB2312", itcd: "ZHR", name: "朱镕基路"},
		{decl: "GBK", itcd: "HET", name: "呼和浩特"},
		{decl: "GB18030", itcd: "CTU", name: "成都天府"},
	}
	for i, c := range cities {
		_, err := mb.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (?, 'VALID')`, c.text(i+1))
		require.NoError(t, err)
	}
	var hex string
	require.NoError(t, mb.SQL.QueryRow(`SELECT HEX(CMINMSGS_CLOB_MSG) FROM cminmsgs WHERE CMINMSGS_CLOB_MSG LIKE '%HET%'`).Scan(&hex))
	require.Contains(t, hex, "BAF4BACDBAC6CCD8", "the table holds 呼和浩特 in GBK bytes")
	chinesePipeline(t, db, mb.DSN)
	requireNames(t, db, cities)
}

// TestChineseBytesMailbox: the same with the charset's own bytes in a binary column; the
// GB18030 list carries 㐀, which only GB18030 encodes (four bytes).
func TestChineseBytesMailbox(t *testing.T) {
	t.Parallel()
	db, mb := testdb.New(t), mailboxtest.New(t)
	_, err := mb.SQL.Exec(`ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG mediumblob NOT NULL`)
	require.NoError(t, err)
	cities := []chineseCity{
		{decl: "GB2312", cs: simplifiedchinese.GBK, itcd: "SHA", name: "上海"},
		{decl: "GBK", cs: simplifiedchinese.GBK, itcd: "HET", name: "呼和浩特"},
		{decl: "GB18030", cs: simplifiedchinese.GB18030, itcd: "CTU", name: "成都㐀"},
	}
	for i, c := range cities {
		raw, err := c.cs.NewEncoder().Bytes([]byte(c.text(i + 1)))
		require.NoError(t, err)
		_, err = mb.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (?, 'VALID')`, raw)
		require.NoError(t, err)
	}
	chinesePipeline(t, db, mb.DSN)
	requireNames(t, db, cities)
}

// TestUnreadableBytesAreCodecErrors: bytes msgx cannot read from a binary column — Big5 under its
// own declaration, GBK bytes with two bytes GBK lacks — are CODEC_ERROR (replayable once msgx
// reads them), never MALFORMED, and proc_state keeps the mailbox bytes exactly. (A failing message
// holds the head, so each case runs on its own mailbox.)
func TestUnreadableBytesAreCodecErrors(t *testing.T) {
	t.Parallel()
	big5 := strings.Replace(chineseCity{decl: "Big5", itcd: "TPE", name: "x"}.text(1), "<CNMC>x</CNMC>", "<CNMC>\xA5\x78\xA5\x5F</CNMC>", 1)
	gbk, err := simplifiedchinese.GBK.NewEncoder().String(chineseCity{decl: "GBK", itcd: "HET", name: "呼和浩特"}.text(2))
	require.NoError(t, err)
	for name, c := range map[string]struct{ raw, reason string }{
		"big5":   {raw: big5, reason: "Big5"},
		"broken": {raw: strings.Replace(gbk, "</CNMC>", "\xFF\xFF</CNMC>", 1), reason: "neither UTF-8 nor GBK"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, mb := testdb.New(t), mailboxtest.New(t)
			_, err := mb.SQL.Exec(`ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG mediumblob NOT NULL`)
			require.NoError(t, err)
			_, err = mb.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (?, 'VALID')`, []byte(c.raw))
			require.NoError(t, err)
			chinesePipeline(t, db, mb.DSN)

			var status, class, reason string
			var raw []byte
			require.NoError(t, db.Pool.QueryRow(context.Background(),
				`SELECT status, COALESCE(error_class, ''), COALESCE(reason, ''), raw_bytes FROM proc_state`).Scan(&status, &class, &reason, &raw))
			require.Equal(t, "FAILED", status, reason)
			require.Equal(t, "CODEC_ERROR", class, reason)
			require.Contains(t, reason, c.reason)
			require.Equal(t, []byte(c.raw), raw, "the mailbox bytes are kept exactly")
		})
	}
}
