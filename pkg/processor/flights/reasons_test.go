package flights_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
)

// Every SKIPPED reason the real processor writes for flight messages is one pkg/procstate reads:
// a duplicate (same and different content), an ignored TYPE, a FLOP for an unknown and for a
// DELETED flight, and a late message whose every unit a later-created one had set. Each stored
// text parses, and writing the parsed reason again gives the same text.
func TestSkipReasonsParseAsWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, 10)
	const flid = 7001
	e.run(t, headerAt("SCHD", "DNLD", "20261202060000")+`<SCHD><RECS>1</RECS><FLTR>`+
		fltr(flid, "YG9028", "02DEC261135", "<ESTT>02DEC261135</ESTT>")+`</FLTR></SCHD></MSG>`)
	late := e.skip()
	e.run(t, esttAt(flid, "20261202102200", "02DEC261240"))
	e.enqueueLate(t, late, esttAt(flid, "20261202091100", "02DEC261205"))
	e.drain(t)

	e.run(t, schd("ADFT", matrixBase(8)))
	cncl := flop("CNCL", 9, `<CNCL>`+T1+`</CNCL>`)
	e.run(t,
		cncl, cncl, strings.Replace(cncl, T1, "23JAN210700", 1), // no-match:FLID, then its duplicates
		strings.Replace(flop("CNCL", 8, ""), "<TYPE>FLOP</TYPE>", "<TYPE>LDM</TYPE>", 1),
		flop("FDEL", 8, `<FDEL/>`), flop("CNCL", 8, `<CNCL>`+T1+`</CNCL>`),
	)

	rows, err := e.db.Pool.Query(ctx, `SELECT reason FROM proc_state WHERE status = 'SKIPPED' ORDER BY msg_id`)
	require.NoError(t, err)
	reasons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	kinds := map[procstate.SkipKind]int{}
	for _, r := range reasons {
		s, err := procstate.ParseSkip(r)
		require.NoError(t, err)
		require.Equal(t, r, s.String(), "the reason written again is the same text")
		kinds[s.Kind]++
	}
	require.Equal(t, map[procstate.SkipKind]int{procstate.SkipStaleLate: 1, procstate.SkipNoMatch: 2,
		procstate.SkipDuplicate: 2, procstate.SkipIgnored: 1}, kinds, "reasons: %q", reasons)
	require.Contains(t, reasons, procstate.NoMatch().String())
	require.Contains(t, reasons, procstate.NoMatchDeleted().String())
}
