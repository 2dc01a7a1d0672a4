package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// searchPage is a message search: by type and subtype, SEQN and flight, within a time range
// (airport time; the last day by default), and one page of what it found.
type searchPage struct {
	Type, Styp, SEQN, FLID string
	From, To               string // datetime-local values in airport time
	Searched               bool
	Hits                   []searchHit
	Total                  int64
	Page, Last             int
	Query                  string // the search as a query string (pages, CSV)
}

type searchHit struct {
	MsgID                 int64
	Status, Class, Reason string
	Type, Styp, SEQN      string
	At                    time.Time
	FLID                  string
	Total                 int64
}

const (
	searchPageSize = 100
	searchSpan     = 24 * time.Hour // the default time range, before now
	maxSearchSpan  = 31 * 24 * time.Hour
)

// readSearch reads a message search from a query; from and to are the range it covers.
func (s *Server) readSearch(q url.Values) (p searchPage, from, to time.Time, err error) {
	p = searchPage{Type: strings.ToUpper(strings.TrimSpace(q.Get("type"))), Styp: strings.ToUpper(strings.TrimSpace(q.Get("styp"))),
		SEQN: strings.TrimSpace(q.Get("seqn")), FLID: strings.TrimSpace(q.Get("flid")), From: strings.TrimSpace(q.Get("from")),
		To: strings.TrimSpace(q.Get("to")), Page: 1}
	for _, n := range []string{p.SEQN, p.FLID} {
		if _, err := strconv.ParseInt(n, 10, 64); n != "" && err != nil {
			return p, from, to, userError{"A SEQN or FLID is a number."}
		}
	}
	f, err := s.localTime(p.From)
	if err != nil {
		return p, from, to, err
	}
	t, err := s.localTime(p.To)
	if err != nil {
		return p, from, to, err
	}
	to = s.d.Now()
	if t != nil {
		to = *t
	}
	from = to.Add(-searchSpan)
	if f != nil {
		from = *f
	}
	if !from.Before(to) || to.Sub(from) > maxSearchSpan {
		return p, from, to, userError{"The time range must run forwards and span at most 31 days."}
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 && n <= 100000 {
		p.Page = n
	}
	v := url.Values{}
	for k, x := range map[string]string{"type": p.Type, "styp": p.Styp, "seqn": p.SEQN, "flid": p.FLID, "from": p.From, "to": p.To} {
		if x != "" {
			v.Set(k, x)
		}
	}
	p.Query, p.Searched = v.Encode(), len(q) > 0
	return p, from, to, nil
}

// messageSearch lists the messages of a search, newest first, a page at a time.
func (s *Server) messageSearch(w http.ResponseWriter, r *http.Request) error {
	p, from, to, err := s.readSearch(r.URL.Query())
	if err != nil {
		return err
	}
	if p.Searched {
		if p.Hits, err = collect[searchHit](s, r, messageSearchSQL, from, to, p.Type, p.Styp, p.SEQN, p.FLID,
			searchPageSize, (p.Page-1)*searchPageSize); err != nil {
			return fmt.Errorf("search messages: %w", err)
		}
		if len(p.Hits) > 0 {
			p.Total = p.Hits[0].Total
		}
		p.Last = max(1, int((p.Total+searchPageSize-1)/searchPageSize))
	}
	s.render(w, r, http.StatusOK, "search", "Messages", p)
	return nil
}

// maxExport bounds a CSV export: larger sets are msgxctl's (or narrower filters).
const maxExport = 50000

// messageSearchCSV exports every message of a search (at most maxExport) as CSV.
func (s *Server) messageSearchCSV(w http.ResponseWriter, r *http.Request) error {
	p, from, to, err := s.readSearch(r.URL.Query())
	if err != nil {
		return err
	}
	hits, err := collect[searchHit](s, r, messageSearchSQL, from, to, p.Type, p.Styp, p.SEQN, p.FLID, maxExport, 0)
	if err != nil {
		return fmt.Errorf("search messages: %w", err)
	}
	rows := make([][]string, len(hits))
	for i, h := range hits {
		rows[i] = []string{strconv.FormatInt(h.MsgID, 10), h.Status, h.Class, h.Type, h.Styp, h.SEQN, h.FLID, s.csvTime(h.At), h.Reason}
	}
	return writeCSV(w, "messages", []string{"msg_id", "status", "class", "type", "subtype", "seqn", "flid", "at", "reason"}, rows)
}

// csvTime is an instant in airport time, as RFC 3339 with its offset.
func (s *Server) csvTime(t time.Time) string { return t.In(s.d.Location).Format(time.RFC3339) }

// writeCSV answers a CSV file of a list: its header, then its rows. A cell that a spreadsheet
// would read as a formula (=, +, -, @ first) is given a leading apostrophe: a message's text
// must not run in an operator's spreadsheet.
func writeCSV(w http.ResponseWriter, name string, header []string, rows [][]string) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	c := csv.NewWriter(w)
	if err := c.Write(header); err != nil {
		return err
	}
	for _, row := range rows {
		for i, v := range row {
			if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
				row[i] = "'" + v
			}
		}
		if err := c.Write(row); err != nil {
			return err
		}
	}
	c.Flush()
	return c.Error()
}
