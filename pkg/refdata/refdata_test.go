package refdata_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/refdata"
	"github.com/msgx/msgx/pkg/sis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func msg(t *testing.T, styp, body string, recs string) processor.Message {
	raw := `<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261202080000</DTTM><TYPE>ABDG</TYPE><STYP>` + styp + `</STYP></META>` + recs + body + `</MSG>`
	d, err := sis.Decode([]byte(raw), sis.Options{})
	require.NoError(t, err)
	return processor.Message{ID: 1, Decoded: d, Now: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
}

func TestRefList(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	apply := func(m processor.Message) processor.Outcome {
		var out processor.Outcome
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			var err error
			out, err = refdata.Handler{}.Apply(ctx, tx, m)
			return err
		}))
		return out
	}
	rows := func() map[string]string {
		out := map[string]string{}
		r, err := db.Pool.Query(ctx, `SELECT rkey, fields::text || ' v' || version FROM ref_master WHERE rtype = 'ABDG'`)
		require.NoError(t, err)
		var k, v string
		_, err = pgx.ForEachRow(r, []any{&k, &v}, func() error { out[k] = v; return nil })
		require.NoError(t, err)
		return out
	}
	a1 := `<ABDG><ABCD>A1</ABCD><DESC>bridge</DESC><AHGT>5.5</AHGT><ATHE>y</ATHE><STND>101</STND><STND></STND><STND>102</STND></ABDG>`
	a2 := `<ABDG><ABCD>A2</ABCD><DESC>two</DESC></ABDG>`
	out := apply(msg(t, "DNLD", a1+a2, "<RECS>3</RECS>"))
	require.Equal(t, "warning: RECS 3, 2 records", out.Reason)
	got := rows()
	require.Len(t, got, 2)
	var f map[string]any
	require.NoError(t, json.Unmarshal([]byte(got["A1"][:len(got["A1"])-3]), &f))
	require.Equal(t, map[string]any{"ABCD": "A1", "DESC": "bridge", "AHGT": 5.5, "ATHE": true, "STND": []any{"101", "102"}}, f)

	apply(msg(t, "UPD", `<ABDG><ABCD>A2</ABCD><DESC>two!</DESC></ABDG>`, ""))
	require.Contains(t, rows()["A2"], "v2")
	apply(msg(t, "UPD", `<ABDG><ABCD>A2</ABCD><DESC>two!</DESC></ABDG>`, ""))
	require.Contains(t, rows()["A2"], "v2", "unchanged record: no new version")
	apply(msg(t, "ADD", `<ABDG><ABCD>A3</ABCD></ABDG>`, ""))
	apply(msg(t, "DEL", `<ABDG><ABCD>A1</ABCD></ABDG><ABDG><ABCD>ZZ</ABCD></ABDG>`, ""))
	require.ElementsMatch(t, []string{"A2", "A3"}, keys(rows()))
	apply(msg(t, "RESP", a1, "<RECS>1</RECS>"))
	require.Equal(t, []string{"A1"}, keys(rows()), "a full download removes the keys it does not carry")
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
