package flights_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	t.Parallel()
	e := setup(t, 100)
	ids := e.run(t,
		schd("DNLD", fltr(15, "YG9028", "23JAN210535", `<STND>504</STND><PSDT PSNO="1"><PSST>504</PSST><STST>23JAN210237</STST></PSDT><ERUT RTNO="1"><APCD>CTU</APCD><SCDT>23JAN210535</SCDT></ERUT>`)),
		flop("CNCL", 15, `<CNCL>23JAN210600</CNCL>`),
		flop("CNCL", 15, `<CNCL>23JAN210600</CNCL>`),
		flop("TIPT", 15, `<TIPT><TRTM>23JAN210500</TRTM><TRST>504</TRST></TIPT><TIPT><TRTM>23JAN210500</TRTM><TRST>503</TRST></TIPT>`),
		flop("CNCL", 99, `<CNCL>23JAN210600</CNCL>`),
	)
	for _, id := range ids {
		t.Logf("%d %+v", id, e.outcome(t, id))
	}
	s := e.state(t, 15)
	require.NotNil(t, s)
	t.Logf("%s", stateJSON(t, s))
	for _, ev := range e.events(t, 15) {
		t.Logf("%+v", ev)
	}
}
