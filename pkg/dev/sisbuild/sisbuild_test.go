package sisbuild_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/sis"
)

// Every builder writes a message the decoder accepts, with what the builder was given.
func TestBuildersDecode(t *testing.T) {
	t.Parallel()
	var seq sisbuild.Seq
	at := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		raw       string
		typ, styp string
		seqn      string
		flid      int64
	}{
		{sisbuild.Stand(seq.Next(), at, 100001, "504"), "FLOP", "STND", "1", 100001},
		{sisbuild.FLOP(seq.Next(), "CNCL", 100002, "<CNCL>23JAN210600</CNCL>"), "FLOP", "CNCL", "2", 100002},
		{sisbuild.SCHD(seq.Next(), "ADD", sisbuild.FLTR(100003, "YG9028", "23JAN210535", "<STND>504</STND>")), "SCHD", "ADD", "3", 100003},
	} {
		m, err := sis.Decode([]byte(c.raw), sis.Options{Location: time.UTC})
		require.NoError(t, err, c.raw)
		require.Equal(t, c.typ, m.Meta.TYPE)
		require.Equal(t, c.styp, m.Meta.STYP)
		require.Equal(t, c.seqn, m.Meta.SEQN)
		require.Equal(t, []int64{c.flid}, m.FLIDs())
	}
}
