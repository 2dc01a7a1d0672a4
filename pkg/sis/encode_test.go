package sis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEncodeRequests(t *testing.T) {
	t.Parallel()
	h := RequestHeader{SNDR: "MSGX", SEQN: 42, DTTM: time.Date(2021, 1, 23, 5, 35, 7, 0, shanghai), RoutingID: "AODB"}

	out, err := EncodeRQRD(h, "SLST")
	require.NoError(t, err)
	require.Equal(t, "AODB", out.RoutingID, "ROUTINGID comes from the header (MSGX_REQUEST_ROUTINGID)")
	raw := out.Text
	m, err := Decode(raw, Options{Location: shanghai})
	require.NoError(t, err)
	require.Equal(t, Meta{SNDR: "MSGX", SEQN: "000042", TYPE: "RQRD", STYP: "SLST", DTTM: h.DTTM, DTTMRaw: "20210123053507"}, m.Meta)
	require.Equal(t, KindUnsupported, m.Kind)
	require.Contains(t, string(raw), "<RQRD>\n\t\t<RTYP>SLST</RTYP>\n\t</RQRD>")

	from := time.Date(2021, 1, 23, 0, 0, 0, 0, shanghai)
	out, err = EncodeRQFD(h, from, from.Add(24*time.Hour-time.Minute))
	require.NoError(t, err)
	require.Equal(t, "AODB", out.RoutingID)
	raw = out.Text
	require.Contains(t, string(raw), "<STDB>23JAN210000</STDB>")
	require.Contains(t, string(raw), "<STDE>23JAN212359</STDE>")
	require.Contains(t, string(raw), "<TYPE>RQFD</TYPE>")
	require.Contains(t, string(raw), "<STYP>NONE</STYP>")
	_, err = Decode(raw, Options{})
	require.NoError(t, err)

	_, err = EncodeRQRD(h, "XXXX")
	requireErr(t, err, ClassProtocol, "MSG/RQRD/RTYP")
	_, err = EncodeRQFD(h, from, from.Add(-time.Hour))
	requireErr(t, err, ClassProtocol, "MSG/RQFD/STDE")
	_, err = EncodeRQRD(RequestHeader{SNDR: "TOOLONG", DTTM: h.DTTM, RoutingID: "AODB"}, "SLST")
	requireErr(t, err, ClassProtocol, "MSG/META/SNDR")
	_, err = EncodeRQRD(RequestHeader{SNDR: "VIEW", SEQN: 1_000_000, DTTM: h.DTTM, RoutingID: "AODB"}, "SLST")
	requireErr(t, err, ClassProtocol, "MSG/META/SEQN")
	_, err = EncodeRQRD(RequestHeader{SNDR: "VIEW", DTTM: h.DTTM}, "SLST")
	requireErr(t, err, ClassProtocol, "ROUTINGID")
	_, err = EncodeRQFD(RequestHeader{SNDR: "VIEW", DTTM: h.DTTM, RoutingID: "012345678901234567890123"}, from, from)
	requireErr(t, err, ClassProtocol, "ROUTINGID")
}

func TestFieldJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    Field[int]
		json string
	}{{Field[int]{}, "null"}, {EmptyField[int](), `""`}, {Val(7), "7"}} {
		b, err := tc.f.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, tc.json, string(b))
		var back Field[int]
		require.NoError(t, back.UnmarshalJSON(b))
		require.Equal(t, tc.f, back)
	}
}

// TestRequestsAreASCII: every request is ASCII, so its bytes are the same in whatever charset the
// coutmsgs column has (UTF-8, GBK, GB18030, Latin-1), and a non-ASCII sender is refused.
func TestRequestsAreASCII(t *testing.T) {
	t.Parallel()
	h := RequestHeader{SNDR: "MSGX", SEQN: 999999, DTTM: time.Date(2021, 12, 31, 23, 59, 59, 0, shanghai), RoutingID: "AODB"}
	for code := range refListKeys {
		out, err := EncodeRQRD(h, code)
		require.NoError(t, err)
		require.True(t, isASCII(string(out.Text)), code)
	}
	out, err := EncodeRQFD(h, h.DTTM, h.DTTM.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, isASCII(string(out.Text)))
	h.SNDR = "航"
	_, err = EncodeRQRD(h, "CITY")
	requireErr(t, err, ClassProtocol, "MSG/META/SNDR")
}
