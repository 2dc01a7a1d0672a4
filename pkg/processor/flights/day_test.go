package flights_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
)

// This file generates a realistic airport day (arrivals and departures, linked turnaround
// pairs, code-share children, every collection) as one SCHD DNLD, then a stream of FLOP
// updates, and keeps an independent model of the expected state: plain JSON-shaped maps
// updated by the rules as docs/flight.md states them, written here without package flight.

const sisTime = "02Jan061504"

func sisFmt(t time.Time) string  { return strings.ToUpper(t.Format(sisTime)) }
func jsonFmt(t time.Time) string { return t.Format(flight.TimeLayout) }

// modelFlight is the expected JSON state of one flight.
type modelFlight map[string]any

func newModel(flid int64) modelFlight {
	m := modelFlight{"flid": float64(flid), "state": "ACTIVE", "state_version": 1.0, "mafl": []any{}}
	for _, f := range flight.Fields {
		m[f.Name] = nil
	}
	for _, c := range flight.Collections {
		m[c.Name] = []any{}
	}
	return m
}

// row builds a collection row with every column of c (nil unless given).
func row(c flight.C, kv ...any) map[string]any {
	r := map[string]any{}
	for _, col := range flight.Collections[c].Cols {
		r[col.Name] = nil
	}
	for i := 0; i < len(kv); i += 2 {
		r[kv[i].(string)] = kv[i+1]
	}
	return r
}

func (m modelFlight) clone() modelFlight {
	b, _ := json.Marshal(m)
	var out modelFlight
	_ = json.Unmarshal(b, &out)
	return out
}

// day is a generated day: the snapshot, the model after it and a FLOP stream.
type day struct {
	snapshot string
	model    map[int64]modelFlight
	flids    []int64
	rnd      *rand.Rand
	base     time.Time
}

func genDay(n int, seed uint64) *day {
	d := &day{model: map[int64]modelFlight{}, rnd: rand.New(rand.NewPCG(seed, 7)), base: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	r := d.rnd
	airlines := []string{"CA", "MU", "CZ", "3U", "ZH", "HU"}
	airports := []string{"PEK", "SHA", "CAN", "XIY", "KMG", "HGH", "SZX", "LHR"}
	var recs []string
	for i := 0; i < n; i += 2 {
		// A linked pair: arrival i, departure i+1, same registration and stand.
		arr, dep := int64(500000+i), int64(500000+i+1)
		al := airlines[r.IntN(len(airlines))]
		reno := fmt.Sprintf("B%04d", r.IntN(10000))
		stand := fmt.Sprintf("%d", 100+r.IntN(200))
		sta := d.base.Add(time.Duration(6*60+r.IntN(15*60)) * time.Minute)
		std := sta.Add(time.Duration(45+r.IntN(90)) * time.Minute)
		if std.Day() != sta.Day() {
			std = time.Date(sta.Year(), sta.Month(), sta.Day(), 23, 59, 0, 0, time.UTC)
		}
		for k, flid := range []int64{arr, dep} {
			mvin, sodt, other := "A", sta, dep
			if k == 1 {
				mvin, sodt, other = "D", std, arr
			}
			flno := fmt.Sprintf("%s%d", al, 1000+int(flid%9000))
			m := newModel(flid)
			m["alcd"], m["flno"], m["mvin"], m["sodt"] = al, flno, mvin, jsonFmt(sodt)
			m["flty"], m["flin"], m["acft"], m["reno"] = "W", "D", "320", reno
			m["taop"], m["tafl"], m["taid"] = al, fmt.Sprintf("%s%d", al, 1000+int(other%9000)), float64(other)
			m["trml"], m["maxp"], m["stnd"] = "T2", 180.0, stand
			m["operation_day"] = sodt.Format(time.DateOnly)
			x := fmt.Sprintf(`<FLID>%d</FLID><ALCD>%s</ALCD><FLNO>%s</FLNO><MVIN>%s</MVIN><SODT>%s</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><RENO>%s</RENO><TAOP>%s</TAOP><TAFL>%s</TAFL><TAID>%d</TAID><TRML>T2</TRML><MAXP>180</MAXP><STND>%s</STND>`,
				flid, al, flno, mvin, sisFmt(sodt), reno, al, m["tafl"], other, stand)
			// route
			ap := airports[r.IntN(len(airports))]
			if mvin == "A" {
				t := sodt.Add(-2 * time.Hour)
				x += fmt.Sprintf(`<ROUT RTNO="1"><APCD>%s</APCD><SCDT>%s</SCDT></ROUT><ERUT RTNO="1"><APCD>%s</APCD><SCDT>%s</SCDT></ERUT><ERUT RTNO="2"><APCD>CTU</APCD><SCAT>%s</SCAT></ERUT>`, ap, sisFmt(t), ap, sisFmt(t), sisFmt(sodt))
				m["rout"] = []any{row(flight.ROUT, "rtno", 1.0, "apcd", ap, "scdt", jsonFmt(t))}
				m["erut"] = []any{row(flight.ERUT, "rtno", 1.0, "apcd", ap, "scdt", jsonFmt(t)), row(flight.ERUT, "rtno", 2.0, "apcd", "CTU", "scat", jsonFmt(sodt))}
				belt := fmt.Sprintf("B%d", 1+r.IntN(9))
				x += fmt.Sprintf(`<CLDT CLNO="1"><BELT>%s</BELT><FBAG>%s</FBAG><BTYP>D</BTYP></CLDT>`, belt, sisFmt(sodt.Add(15*time.Minute)))
				m["cldt"] = []any{row(flight.CLDT, "clno", 1.0, "belt", belt, "fbag", jsonFmt(sodt.Add(15*time.Minute)), "btyp", "D")}
			} else {
				t := sodt.Add(2 * time.Hour)
				x += fmt.Sprintf(`<ROUT RTNO="1"><APCD>%s</APCD><SCAT>%s</SCAT></ROUT><ERUT RTNO="1"><APCD>CTU</APCD><SCDT>%s</SCDT></ERUT><ERUT RTNO="2"><APCD>%s</APCD><SCAT>%s</SCAT></ERUT>`, ap, sisFmt(t), sisFmt(sodt), ap, sisFmt(t))
				m["rout"] = []any{row(flight.ROUT, "rtno", 1.0, "apcd", ap, "scat", jsonFmt(t))}
				m["erut"] = []any{row(flight.ERUT, "rtno", 1.0, "apcd", "CTU", "scdt", jsonFmt(sodt)), row(flight.ERUT, "rtno", 2.0, "apcd", ap, "scat", jsonFmt(t))}
				x += fmt.Sprintf(`<CKDT CKNO="1"><CHKC>K%02d</CHKC><PCOT>%s</PCOT><CTYP>D</CTYP></CKDT><CKDT CKNO="2"><CHKC>K%02d</CHKC><CTYP>D</CTYP></CKDT>`, flid%40, sisFmt(sodt.Add(-2*time.Hour)), flid%40+1)
				m["ckdt"] = []any{row(flight.CKDT, "ckno", 1.0, "chkc", fmt.Sprintf("K%02d", flid%40), "pcot", jsonFmt(sodt.Add(-2*time.Hour)), "ctyp", "D"),
					row(flight.CKDT, "ckno", 2.0, "chkc", fmt.Sprintf("K%02d", flid%40+1), "ctyp", "D")}
				x += fmt.Sprintf(`<CHDT CHNO="1"><CHUT>C%d</CHUT><CTYP>D</CTYP></CHDT><GTDT GTNO="1"><GATE>G%d</GATE><PGOT>%s</PGOT></GTDT>`, flid%7, flid%30, sisFmt(sodt.Add(-40*time.Minute)))
				m["chdt"] = []any{row(flight.CHDT, "chno", 1.0, "chut", fmt.Sprintf("C%d", flid%7), "ctyp", "D")}
				m["gtdt"] = []any{row(flight.GTDT, "gtno", 1.0, "gate", fmt.Sprintf("G%d", flid%30), "pgot", jsonFmt(sodt.Add(-40*time.Minute)))}
			}
			x += fmt.Sprintf(`<PSDT PSNO="1"><PSST>%s</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, stand, sisFmt(sta), sisFmt(std))
			m["psdt"] = []any{row(flight.PSDT, "psno", 1.0, "psst", stand, "stst", jsonFmt(sta), "stet", jsonFmt(std))}
			x += fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>%s</CHST></CHOT><ABTM ASNO="1"><ABDG>A%d</ABDG><ABOP>A</ABOP></ABTM>`, sisFmt(sta), stand, flid%20)
			m["chot"] = []any{row(flight.CHOT, "csno", 1.0, "chtm", jsonFmt(sta), "chid", "ON", "chst", stand)}
			m["abtm"] = []any{row(flight.ABTM, "asno", 1.0, "abdg", fmt.Sprintf("A%d", flid%20), "abop", "A")}
			if r.IntN(10) == 0 {
				x += `<DELY CODE="WX" DURA="0015">fog</DELY><SRVT><SRTC>WAT</SRTC><SRQT>1</SRQT></SRVT><VIPF><VPCD>V1</VPCD><VFES>2</VFES></VIPF>`
				m["dely"] = []any{row(flight.DELY, "code", "WX", "dura_min", 15.0, "comment", "fog")}
				m["srvt"] = []any{row(flight.SRVT, "srtc", "WAT", "srqt", "1")}
				m["vipf"] = []any{row(flight.VIPF, "vpcd", "V1", "vfes", "2", "vipt", []any{})}
			}
			// Code-share: about one flight in ten is a child of an earlier flight.
			if len(d.flids) > 10 && r.IntN(10) == 0 {
				master := d.flids[r.IntN(len(d.flids))]
				x += fmt.Sprintf(`<CSOP>%s</CSOP><CSFT>%s</CSFT><MAID>%d</MAID>`, d.model[master]["alcd"], d.model[master]["flno"], master)
				m["csop"], m["csft"], m["maid"] = d.model[master]["alcd"], d.model[master]["flno"], float64(master)
			}
			recs = append(recs, x)
			d.model[flid] = m
			d.flids = append(d.flids, flid)
		}
	}
	d.deriveMAFL(nil)
	var b strings.Builder
	b.WriteString(header("SCHD", "DNLD"))
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(recs))
	for _, r := range recs {
		b.WriteString("<FLTR>" + r + "</FLTR>")
	}
	b.WriteString("</SCHD></MSG>")
	d.snapshot = b.String()
	return d
}

// deriveMAFL recomputes every master's projection; a master whose projection changed and
// that is not in bumped gets one more version.
func (d *day) deriveMAFL(bumped map[int64]bool) {
	want := map[int64][]any{}
	for _, id := range d.flids {
		m := d.model[id]
		maid, ok := m["maid"].(float64)
		if !ok || m["state"] != "ACTIVE" || int64(maid) == id {
			continue
		}
		want[int64(maid)] = append(want[int64(maid)], map[string]any{"flid": float64(id), "flno": m["flno"]})
	}
	for _, id := range d.flids { // d.flids is sorted by FLID
		m := d.model[id]
		if m["state"] != "ACTIVE" {
			continue
		}
		w := want[id]
		if w == nil {
			w = []any{}
		}
		if !reflect.DeepEqual(m["mafl"], w) {
			m["mafl"] = w
			if bumped != nil && !bumped[id] {
				m["state_version"] = m["state_version"].(float64) + 1
			}
		}
	}
}

// nextFlop returns a random FLOP and applies its expected effect to the model.
func (d *day) nextFlop() string {
	r := d.rnd
	if r.IntN(200) == 0 {
		return flop("CNCL", 999999999, "<CNCL></CNCL>") // unknown flight: SKIPPED
	}
	flid := d.flids[r.IntN(len(d.flids))]
	m := d.model[flid]
	before := m.clone()
	t := d.base.Add(time.Duration(r.IntN(24*60)) * time.Minute)
	var raw string
	switch k := r.IntN(100); {
	case k < 1:
		raw = flop("FDEL", flid, "<FDEL/>")
		if m["state"] == "ACTIVE" {
			m["state"], m["mafl"] = "DELETED", []any{}
		}
	case k < 40:
		styp := []string{"CNCL", "EOBT", "TOBT", "ESTT", "ACTT", "BOTM", "COBT"}[r.IntN(7)]
		if r.IntN(5) == 0 {
			raw = flop(styp, flid, "<"+styp+"></"+styp+">")
			m[strings.ToLower(styp)] = nil
		} else {
			raw = flop(styp, flid, "<"+styp+">"+sisFmt(t)+"</"+styp+">")
			m[strings.ToLower(styp)] = jsonFmt(t)
		}
	case k < 50:
		v := fmt.Sprintf("%d", 100+r.IntN(200))
		raw = flop("STND", flid, "<STND>"+v+"</STND>")
		m["stnd"] = v
	case k < 55:
		v := []string{"", "boarding", "gate change 登机口"}[r.IntN(3)]
		raw = flop("REMC", flid, "<REMC>"+v+"</REMC>")
		m["remc"] = v
	case k < 60:
		a, b := r.IntN(3), r.IntN(3)
		raw = flop("HNAG", flid, fmt.Sprintf("<FHAG>%s</FHAG><PHAG>%s</PHAG>", optNum(a), optNum(b)))
		m["fhag"], m["phag"], m["mhag"] = optModel(a), optModel(b), nil
	case k < 68:
		n := 1 + r.IntN(3)
		var x string
		var rows []any
		for i := 1; i <= n; i++ {
			g := fmt.Sprintf("G%d", r.IntN(40))
			x += fmt.Sprintf(`<GTDT GTNO="%d"><GATE>%s</GATE><PGOT>%s</PGOT></GTDT>`, i, g, sisFmt(t))
			rows = append(rows, row(flight.GTDT, "gtno", float64(i), "gate", g, "pgot", jsonFmt(t)))
		}
		raw = flop("GTDT", flid, x)
		m["gtdt"] = rows
	case k < 78:
		if r.IntN(10) == 0 {
			raw = flop("DELY", flid, "<DELY></DELY>")
			m["dely"] = []any{}
			break
		}
		code := []string{"AA", "BB", "CC", "WX"}[r.IntN(4)]
		h, mi := r.IntN(3), r.IntN(60)
		raw = flop("DELY", flid, fmt.Sprintf(`<DELY CODE="%s" STRT="%s" DURA="%02d%02d">c%d</DELY>`, code, sisFmt(t), h, mi, mi))
		m["dely"] = mergeRow(m["dely"], "code", row(flight.DELY, "code", code, "strt", jsonFmt(t), "dura_min", float64(h*60+mi), "comment", fmt.Sprintf("c%d", mi)))
	case k < 86:
		if r.IntN(10) == 0 {
			raw = flop("SRVT", flid, "<SRVT></SRVT>")
			m["srvt"] = []any{}
			break
		}
		code, q := []string{"WAT", "FUE", "CAT"}[r.IntN(3)], r.IntN(5)
		raw = flop("SRVT", flid, fmt.Sprintf(`<SRVT><SRTC>%s</SRTC><SRQT>%d</SRQT><SRST>%s</SRST></SRVT>`, code, q, sisFmt(t)))
		m["srvt"] = mergeRow(m["srvt"], "srtc", row(flight.SRVT, "srtc", code, "srqt", fmt.Sprint(q), "srst", jsonFmt(t)))
	case k < 93:
		stand := fmt.Sprintf("%d", 100+r.IntN(200))
		if ps := m["psdt"].([]any); len(ps) > 0 && r.IntN(4) > 0 {
			stand = ps[0].(map[string]any)["psst"].(string)
		}
		raw = flop("PSHT", flid, fmt.Sprintf(`<PSHT PSHN="1"><PSTM>%s</PSTM><PSID>IN</PSID><PUST>%s</PUST></PSHT>`, sisFmt(t), stand))
		for _, x := range m["psdt"].([]any) {
			if x := x.(map[string]any); x["psst"] == stand {
				x["pstm"], x["psid"], x["pshn"] = jsonFmt(t), "IN", 1.0
			}
		}
	default:
		ap := []string{"PEK", "SHA", "NKG"}[r.IntN(3)]
		raw = flop("ERUT", flid, fmt.Sprintf(`<ERUT RTNO="2"><APCD>%s</APCD><SCAT>%s</SCAT></ERUT>`, ap, sisFmt(t)))
		m["erut"] = mergeRow(m["erut"], "rtno", row(flight.ERUT, "rtno", 2.0, "apcd", ap, "scat", jsonFmt(t)))
	}
	if before["state"] == "DELETED" { // no-match:deleted: nothing changes
		d.model[flid] = before
		return raw
	}
	if !reflect.DeepEqual(before, m) {
		m["state_version"] = m["state_version"].(float64) + 1
		if m["state"] == "DELETED" {
			d.deriveMAFL(map[int64]bool{flid: true})
		}
	}
	return raw
}

func optNum(k int) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprint(110000 + k)
}

func optModel(k int) any {
	if k == 0 {
		return nil
	}
	return float64(110000 + k)
}

func mergeRow(list any, key string, r map[string]any) []any {
	rows := slices.Clone(list.([]any))
	for i, x := range rows {
		if x.(map[string]any)[key] == r[key] {
			rows[i] = r
			return rows
		}
	}
	return append(rows, r)
}

// check compares every flight's stored state with the model.
func (d *day) check(t testing.TB, e *env) {
	t.Helper()
	for _, id := range d.flids {
		got := stateJSON(t, e.state(t, id))
		want := map[string]any(d.model[id].clone())
		if !reflect.DeepEqual(want, got) {
			for k := range want {
				require.Equal(t, want[k], got[k], "flight %d field %s", id, k)
			}
			require.Equal(t, want, got, "flight %d", id)
		}
	}
}

// TestGeneratedDay runs a generated airport day against the model: a quarter of a day (500
// flights, 12,500 FLOPs) in make test, the full day (2,000 flights, 50,000 FLOPs) with
// MSGX_SOAK=1 (make soak), a small one with -short.
func TestGeneratedDay(t *testing.T) {
	t.Parallel()
	flights, flops := 500, 12500
	switch {
	case os.Getenv("MSGX_SOAK") == "1":
		flights, flops = 2000, 50000
	case testing.Short():
		flights, flops = 200, 500
	}
	d := genDay(flights, 1)
	e := setup(t, 100)
	id := e.run(t, d.snapshot)[0]
	require.Equal(t, outcome{"SUCCEEDED", "", ""}, e.outcome(t, id))
	d.check(t, e)
	raws := make([]string, flops)
	for i := range raws {
		raws[i] = d.nextFlop()
	}
	ids := e.run(t, raws...)
	for _, id := range ids {
		require.NotEqual(t, "DEAD", e.outcome(t, id).Status)
		require.NotEqual(t, "FAILED", e.outcome(t, id).Status)
	}
	d.check(t, e)
}
