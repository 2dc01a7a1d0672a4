package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
)

// flightsPage is the flight search and its hits.
type flightsPage struct {
	Q, Day    string
	Query     string // the search as a query string (the CSV link)
	Searched  bool
	Hits      []flightHit
	Truncated bool
}

// flightHit is one search result.
type flightHit struct {
	FLID         int64
	ALCD, FLNO   string
	MVIN         string
	OperationDay *time.Time
	State        string
	Version      int64
	SODT         *time.Time
	Reg, Stand   string
}

// Number is the flight's number as the console shows it (flightNumber).
func (h flightHit) Number() string { return flightNumber(h.ALCD, h.FLNO) }

// flightNumber is a flight's number with its airline code once: the AODB's FLNO usually starts
// with the code (CX4773), and when it does not, the code goes in front.
func flightNumber(alcd, flno string) string {
	if strings.HasPrefix(flno, alcd) {
		return flno
	}
	return alcd + flno
}

const searchLimit = 300

// flightQuery is a flight search as the page and its CSV read it: a part of a flight number, a
// registration or a stand (at most 40 characters), and a day (nil: any).
type flightQuery struct {
	Q, Day string
	day    *time.Time
}

// readFlightQuery reads and checks the search of a request.
func readFlightQuery(r *http.Request) (flightQuery, error) {
	f := flightQuery{Q: strings.TrimSpace(r.URL.Query().Get("q")), Day: strings.TrimSpace(r.URL.Query().Get("day"))}
	if len(f.Q) > 40 {
		return f, userError{"Search for at most 40 characters."}
	}
	if f.Day != "" {
		d, err := time.Parse(time.DateOnly, f.Day)
		if err != nil {
			return f, userError{"The day must be YYYY-MM-DD."}
		}
		f.day = &d
	}
	return f, nil
}

// flightSearch finds flights by a part of the flight number, a registration or a stand, on a day
// or any; a day alone lists its flights; a number that is a FLID opens that flight.
func (s *Server) flightSearch(w http.ResponseWriter, r *http.Request) error {
	f, err := readFlightQuery(r)
	p := flightsPage{Q: f.Q, Day: f.Day}
	if p.Q == "" && p.Day == "" {
		s.render(w, r, http.StatusOK, "flights", "Flights", p)
		return nil
	}
	if err != nil {
		return err
	}
	if flid, err := strconv.ParseInt(p.Q, 10, 64); err == nil && p.Day == "" {
		var found bool
		if err := s.d.Pool.QueryRow(r.Context(), flightExistsSQL, flid).Scan(&found); err != nil {
			return fmt.Errorf("look up flight: %w", err)
		}
		if found {
			http.Redirect(w, r, "/flights/"+strconv.FormatInt(flid, 10), http.StatusSeeOther)
			return nil
		}
	}
	hits, err := collect[flightHit](s, r, flightSearchSQL, f.Q, f.day, searchLimit+1)
	if err != nil {
		return fmt.Errorf("search flights: %w", err)
	}
	if len(hits) == 1 && p.Q != "" {
		http.Redirect(w, r, "/flights/"+strconv.FormatInt(hits[0].FLID, 10), http.StatusSeeOther)
		return nil
	}
	p.Searched, p.Truncated = true, len(hits) > searchLimit
	p.Query = url.Values{"q": {p.Q}, "day": {p.Day}}.Encode()
	p.Hits = hits[:min(len(hits), searchLimit)]
	s.render(w, r, http.StatusOK, "flights", "Flights", p)
	return nil
}

// flightsCSV exports the flights of a search or a day (at most maxExport) as CSV.
func (s *Server) flightsCSV(w http.ResponseWriter, r *http.Request) error {
	f, err := readFlightQuery(r)
	if err != nil {
		return err
	}
	hits, err := collect[flightHit](s, r, flightSearchSQL, f.Q, f.day, maxExport)
	if err != nil {
		return fmt.Errorf("search flights: %w", err)
	}
	rows := make([][]string, len(hits))
	for i, h := range hits {
		var opDay, sodt string
		if h.OperationDay != nil {
			opDay = h.OperationDay.Format(time.DateOnly)
		}
		if h.SODT != nil {
			sodt = h.SODT.Format("2006-01-02 15:04")
		}
		rows[i] = []string{strconv.FormatInt(h.FLID, 10), h.Number(), h.MVIN, opDay, sodt, h.Reg, h.Stand, h.State, strconv.FormatInt(h.Version, 10)}
	}
	return writeCSV(w, "flights", []string{"flid", "flight", "mvin", "operation_day", "scheduled", "registration", "stand", "state", "version"}, rows)
}

// flightPage is one flight: its current state as the read API serves it (or, once purged, the
// final state the history sweep kept), its MAFL and its version history.
type flightPage struct {
	FLID     int64
	Title    string // airline code and flight number
	State    string
	Version  string
	Day      string
	Master   int64 // the code-share master (MAID); 0: none
	Purged   *purge
	MAFL     []flight.Child
	Summary  summary
	Fields   []field
	Timeline []timelineRow
}

// purge is why and when the history sweep purged a flight.
type purge struct {
	Reason string
	At     time.Time
}

const historyLimit = 200

func (s *Server) flight(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	flid, err := strconv.ParseInt(r.PathValue("flid"), 10, 64)
	if err != nil {
		return errNotFound
	}
	p := flightPage{FLID: flid}
	st, err := flightstore.Read(ctx, s.d.Pool, flid)
	if err != nil {
		return fmt.Errorf("read flight: %w", err)
	}
	var doc map[string]any
	if st != nil {
		doc, err = stateDoc(st)
		p.MAFL = st.MAFL
	} else {
		doc, p.Purged, err = s.purgedFlight(ctx, flid)
	}
	if err != nil {
		return err
	}
	p.describe(doc)
	versions, err := collect[version](s, r, flightEventsSQL, strconv.FormatInt(flid, 10), historyLimit)
	if err != nil {
		return fmt.Errorf("read flight events: %w", err)
	}
	p.Timeline = timeline(versions)
	s.render(w, r, http.StatusOK, "flight", fmt.Sprintf("Flight %d", flid), p)
	return nil
}

// stateDoc is a state's JSON as published, shown as pageDoc shows it.
func stateDoc(st *flight.State) (map[string]any, error) {
	doc, err := decodeDoc(st.AppendJSON(nil))
	if err != nil {
		return nil, fmt.Errorf("read flight %d: %w", st.FLID, err)
	}
	return pageDoc(doc), nil
}

// pageDoc is a published state as the page shows it: wall-clock times without their instants
// (the page shows the airport's clock), no MAFL (the page lists it apart), no empty collections.
func pageDoc(doc map[string]any) map[string]any {
	delete(doc, "mafl")
	dropInstants(doc, flight.Fields[:])
	for _, c := range flight.Collections {
		rows, _ := doc[c.Name].([]any)
		if len(rows) == 0 {
			delete(doc, c.Name)
		}
		for _, r := range rows {
			if row, ok := r.(map[string]any); ok {
				dropInstants(row, c.Cols)
			}
		}
	}
	return doc
}

// dropInstants deletes the instant beside each time column of cols.
func dropInstants(doc map[string]any, cols []flight.Column) {
	for _, col := range cols {
		if col.Kind == flight.KindTime {
			delete(doc, col.Name+flight.InstantSuffix)
		}
	}
}

// purgedFlight is a purged flight's final state as the history sweep kept it; errNotFound when
// the flight was never purged either.
func (s *Server) purgedFlight(ctx context.Context, flid int64) (map[string]any, *purge, error) {
	var final []byte
	var pg purge
	if err := s.d.Pool.QueryRow(ctx, flightPurgedSQL, flid).Scan(&final, &pg.Reason, &pg.At); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, errNotFound
		}
		return nil, nil, fmt.Errorf("read purged flight: %w", err)
	}
	doc, err := decodeDoc(final)
	if err != nil {
		return nil, nil, fmt.Errorf("read purged flight %d: %w", flid, err)
	}
	if row, ok := doc["flight"].(map[string]any); ok {
		return legacyPurge(row, doc["details"]), &pg, nil
	}
	return pageDoc(doc), &pg, nil
}

// legacyPurge reads a history document of the earlier form, still kept for
// MSGX_FLIGHT_HISTORY_RETENTION: the flight row's columns and its detail tables by table name,
// the non-empty ones shown.
func legacyPurge(row map[string]any, details any) map[string]any {
	tables, _ := details.(map[string]any)
	for table, rows := range tables {
		if list, ok := rows.([]any); ok && len(list) > 0 {
			row[table] = rows
		}
	}
	return row
}

// describe fills the page's header and fields from a flight's JSON.
func (p *flightPage) describe(doc map[string]any) {
	p.Fields, p.Summary = fields(doc), summarize(doc)
	p.Title = flightNumber(str(doc["alcd"]), str(doc["flno"]))
	p.State, p.Version, p.Day = str(doc["state"]), str(doc["state_version"]), str(doc["operation_day"])
	p.Master, _ = strconv.ParseInt(str(doc["maid"]), 10, 64)
}

// decodeDoc decodes a JSON object, numbers kept as written.
func decodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	err := dec.Decode(&doc)
	return doc, err
}
