package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/msgx/msgx/pkg/mailbox"
)

// chineseRemark is a FLOP remark under encoding decl.
func chineseRemark(decl, remark string) string {
	return `<?xml version="1.0" encoding="` + decl + `"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261202080000</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP></META>
<FLOP><FLID>15</FLID><REMC>` + remark + `</REMC></FLOP></MSG>`
}

// alterClob changes the type of the mailbox text column (the AODB's choice of charset).
func (b *bundle) alterClob(t *testing.T, typ string) {
	t.Helper()
	_, err := b.mb.SQL.ExecContext(context.Background(), `ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG `+typ+` NOT NULL`)
	require.NoError(t, err)
}

// TestGBKColumnServerConverted: in a gbk table the server stores GBK bytes and hands msgx UTF-8
// under the GB2312 declaration; the copy is that text, byte for byte, and it is counted.
func TestGBKColumnServerConverted(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	b.alterClob(t, "mediumtext CHARACTER SET gbk")
	text := chineseRemark("GB2312", "航班延误，请到成都东站候车")
	id := b.insert(t, text)
	var stored []byte
	require.NoError(t, b.mb.SQL.QueryRowContext(context.Background(),
		`SELECT CAST(CMINMSGS_CLOB_MSG AS BINARY) FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&stored))
	gbk, err := simplifiedchinese.GBK.NewEncoder().String(text)
	require.NoError(t, err)
	require.Equal(t, gbk, string(stored), "the mailbox holds GBK bytes")

	b.drain(t, b.ing)
	got := b.stored(t)[id]
	require.NotNil(t, got.Raw)
	require.Equal(t, text, *got.Raw)
	require.Equal(t, sha(text), got.Sum)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_declared_charset_rows_total", "declared", "GB2312", "bytes", "utf-8"))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_unstorable_rows_total"))
}

// TestGBKBytesBinaryColumn: from a binary column msgx receives the GBK bytes themselves; the text
// copy is their UTF-8 reading under the unchanged declaration (PostgreSQL text holds nothing
// else), which encodes back to the mailbox bytes, and raw_bytes holds the mailbox bytes exactly;
// the hash is of the mailbox bytes. Bytes valid in neither UTF-8 nor the declared charset have no
// text copy (raw NULL) but keep their bytes, for the processor's CODEC_ERROR.
func TestGBKBytesBinaryColumn(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	b.alterClob(t, "mediumblob")
	text := chineseRemark("GBK", "旅客请到呼和浩特白塔机场二号航站楼")
	gbk, err := simplifiedchinese.GBK.NewEncoder().String(text)
	require.NoError(t, err)
	insertBytes := func(raw string) int64 {
		res, err := b.mb.SQL.ExecContext(context.Background(),
			`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (?, 'VALID')`, []byte(raw))
		require.NoError(t, err)
		id, err := res.LastInsertId()
		require.NoError(t, err)
		return id
	}
	id := insertBytes(gbk)
	broken := insertBytes(strings.Replace(gbk, "</REMC>", "\xFF\xFF</REMC>", 1))
	other := insertBytes(chineseRemark("Big5", "abc"))

	b.drain(t, b.ing)
	got := b.stored(t)
	require.NotNil(t, got[id].Raw)
	require.Equal(t, text, *got[id].Raw)
	require.Equal(t, sha(gbk), got[id].Sum)
	back, err := simplifiedchinese.GBK.NewEncoder().String(*got[id].Raw)
	require.NoError(t, err)
	require.Equal(t, gbk, back, "the copy encodes back to the mailbox bytes")
	require.Equal(t, []byte(gbk), got[id].Bytes, "the mailbox bytes are kept exactly")
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_declared_charset_rows_total", "declared", "GBK", "bytes", "declared"))

	require.Nil(t, got[broken].Raw)
	require.Equal(t, []byte(strings.Replace(gbk, "</REMC>", "\xFF\xFF</REMC>", 1)), got[broken].Bytes)
	require.Equal(t, sha(strings.Replace(gbk, "</REMC>", "\xFF\xFF</REMC>", 1)), got[broken].Sum)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_unstorable_rows_total"))
	require.NotNil(t, got[other].Raw, "an encoding msgx does not read is kept for the processor's CODEC_ERROR")
	require.Equal(t, chineseRemark("Big5", "abc"), *got[other].Raw)
	require.Nil(t, got[other].Bytes, "text stored as it arrived needs no byte copy")
}

// TestRunRefusesConnectionCharset: a mailbox connection that does not talk utf8mb4 stops the
// term before any poll.
func TestRunRefusesConnectionCharset(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	box, err := mailbox.Open(b.mb.DSN + "&charset=gbk")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	b.insert(t, chineseRemark("GBK", "中文"))
	ing, err := New(b.cfg, Deps{DB: b.pg.Pool, Mailbox: box, Fence: b.lease, Clock: b.clock, Metrics: b.metrics, Log: zerolog.Nop()})
	require.NoError(t, err)
	require.ErrorIs(t, ing.Run(context.Background()), mailbox.ErrCharset)
	require.Empty(t, b.stored(t))
}
