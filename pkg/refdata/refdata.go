// Package refdata keeps the AODB reference data (docs/spec.md §7, docs/sis.md §b.6, §e.8): the 23 reference
// lists and the seasonal schedule SCHS, one ref_master row per (rtype, rkey) with the record's
// fields as typed JSON.
//
//	ADD, UPD   upsert the records (an UPD for an unknown key inserts)
//	DEL        remove the records' keys (unknown key: no-op)
//	DNLD, RESP upsert every record, then remove every stored key of that list not in the message
//	           (a RESP only under a matching open request: the RESP guard, docs/requests.md)
//	SCHS       one row per season: rkey = APCD|SDAT|EDAT, the season header and its patterns
//
// A row's version grows by one when its fields change; an unchanged record writes nothing.
// RECS disagreeing with the record count is a warning (the outcome's reason), never a rejection.
package refdata

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

const (
	upsertSQL = `INSERT INTO ref_master (rtype, rkey, fields, version, updated_by_msg, updated_at)
SELECT $1, u.k, u.f::jsonb, 1, $4, $5 FROM unnest($2::text[], $3::text[]) AS u(k, f)
ON CONFLICT (rtype, rkey) DO UPDATE
   SET fields = EXCLUDED.fields, version = ref_master.version + 1,
       updated_by_msg = EXCLUDED.updated_by_msg, updated_at = EXCLUDED.updated_at
 WHERE ref_master.fields IS DISTINCT FROM EXCLUDED.fields`

	deleteSQL = `DELETE FROM ref_master WHERE rtype = $1 AND rkey = ANY($2::text[])`

	// refreshSQL removes the keys of a list that a full download did not carry.
	refreshSQL = `DELETE FROM ref_master WHERE rtype = $1 AND NOT (rkey = ANY($2::text[]))`
)

// Handler is the reference-data plug-in of the processor stage: it applies reference-list
// messages (KindRefList) and seasonal schedules (KindSeason).
type Handler struct {
	// Requests, when set, is the RESP guard (docs/requests.md): a list RESP is applied (and
	// deletes the keys it does not carry) only under a matching open RQRD, which it closes DONE;
	// otherwise it is SKIPPED no-open-request and changes nothing. cmd/processor always sets it;
	// without it (tests of the list rules) a RESP is applied like a DNLD.
	Requests *request.Hooks
}

var _ processor.Handler = Handler{}

// Apply applies one reference message.
func (h Handler) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	switch {
	case m.Decoded.RefList != nil && m.Decoded.RefList.Action == "RESP" && h.Requests != nil:
		var out processor.Outcome
		a, err := h.Requests.Answer(ctx, tx, request.ListResponse(m.Decoded), m.ID, m.Now, func() error {
			var err error
			out, err = applyList(ctx, tx, m, m.Decoded.RefList)
			return err
		})
		switch {
		case err != nil:
			return processor.Outcome{}, err
		case a.Skip != "":
			return processor.Outcome{Skipped: true, Reason: a.Skip}, nil
		}
		if out.Reason != "" {
			out.Reason = a.Note() + "; " + out.Reason
		} else {
			out.Reason = a.Note()
		}
		return out, nil
	case m.Decoded.RefList != nil:
		return applyList(ctx, tx, m, m.Decoded.RefList)
	case m.Decoded.Season != nil:
		return applySeason(ctx, tx, m, m.Decoded.Season)
	}
	return processor.Outcome{}, processor.Errorf(procstate.ClassProtocol, "reference message without a body")
}

func applyList(ctx context.Context, tx pgx.Tx, m processor.Message, l *sis.RefList) (processor.Outcome, error) {
	var warn string
	if l.DeclaredRecs >= 0 && l.DeclaredRecs != len(l.Records) {
		warn = fmt.Sprintf("warning: RECS %d, %d records", l.DeclaredRecs, len(l.Records))
	}
	// Last record of a key wins; keys keep their first position.
	idx := map[string]int{}
	var keys, fields []string
	for i, r := range l.Records {
		if r.Key == "" {
			return processor.Outcome{}, processor.Errorf(procstate.ClassProtocol, "%s record %d: key field missing", l.Type, i+1)
		}
		f, err := FieldsJSON(r.Fields)
		if err != nil {
			return processor.Outcome{}, err
		}
		if j, ok := idx[r.Key]; ok {
			fields[j] = f
			continue
		}
		idx[r.Key] = len(keys)
		keys, fields = append(keys, r.Key), append(fields, f)
	}
	b := &pgx.Batch{}
	switch l.Action {
	case "ADD", "UPD":
		b.Queue(upsertSQL, l.Type, keys, fields, m.ID, m.Now)
	case "DEL":
		b.Queue(deleteSQL, l.Type, keys)
	case "DNLD", "RESP":
		b.Queue(upsertSQL, l.Type, keys, fields, m.ID, m.Now)
		b.Queue(refreshSQL, l.Type, keys)
	default:
		return processor.Outcome{}, processor.Errorf(procstate.ClassProtocol, "reference list action %q", l.Action)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return processor.Outcome{}, fmt.Errorf("apply %s %s: %w", l.Type, l.Action, err)
	}
	return processor.Outcome{Reason: warn}, nil
}

// seasonKey identifies a season: its airport and validity (docs/sis.md §e.6: a season with the same
// SDAT/EDAT is replaced).
func seasonKey(s *sis.Season) string {
	return s.APCD + "|" + s.SDAT.Format("2006-01-02") + "|" + s.EDAT.Format("2006-01-02")
}

func applySeason(ctx context.Context, tx pgx.Tx, m processor.Message, s *sis.Season) (processor.Outcome, error) {
	var warn string
	if s.DeclaredRecs >= 0 && s.DeclaredRecs != len(s.Records) {
		warn = fmt.Sprintf("warning: RECS %d, %d records", s.DeclaredRecs, len(s.Records))
	}
	doc := map[string]any{
		"SNAM": s.SNAM, "APCD": s.APCD,
		"SDAT": s.SDAT.Format("2006-01-02"), "EDAT": s.EDAT.Format("2006-01-02"),
		"FLTR": s.Records,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return processor.Outcome{}, fmt.Errorf("encode season: %w", err)
	}
	if _, err := tx.Exec(ctx, upsertSQL, "SCHS", []string{seasonKey(s)}, []string{string(b)}, m.ID, m.Now); err != nil {
		return processor.Outcome{}, fmt.Errorf("apply SCHS: %w", err)
	}
	return processor.Outcome{Reason: warn}, nil
}

// repeating are the reference fields that may repeat: always a JSON array (docs/sis.md §b.6).
var repeating = map[string]bool{"STND": true, "GATE": true, "OGRP": true, "OCAT": true, "REGC": true,
	"SUBC": true, "ABBR": true}

// flags are the Y/N fields: true only for Y (any case).
var flags = map[string]bool{"ATHE": true, "FEPU": true, "ABNS": true, "TPAX": true, "CTRA": true, "FCML": true}

// numbers are the numeric fields (heights, weights, counts, distances, ids).
var numbers = map[string]bool{"AHGT": true, "AMNO": true, "MAXP": true, "MFWT": true, "MTWT": true,
	"ALEN": true, "WSPN": true, "MHTM": true, "MABR": true, "BDIS": true, "SHGT": true, "SWID": true,
	"MABS": true, "OWID": true, "OGID": true}

// FieldsJSON turns a record's fields into a JSON object: one key per element name; repeating
// elements as arrays without empty entries; Y/N flags as booleans; numeric fields as numbers
// (null when empty); an element with attributes or children as an object ("value" holds its
// text); everything else as trimmed text.
func FieldsJSON(fs []sis.RefField) (string, error) {
	b, err := json.Marshal(object(fs))
	if err != nil {
		return "", fmt.Errorf("encode reference fields: %w", err)
	}
	return string(b), nil
}

func object(fs []sis.RefField) map[string]any {
	out := make(map[string]any, len(fs))
	count := map[string]int{}
	for _, f := range fs {
		count[f.Name]++
	}
	for _, f := range fs {
		if repeating[f.Name] || count[f.Name] > 1 {
			arr, _ := out[f.Name].([]any)
			if arr == nil {
				arr = []any{}
			}
			if f.Value != "" || len(f.Attrs) > 0 || len(f.Children) > 0 {
				arr = append(arr, value(f))
			}
			out[f.Name] = arr
			continue
		}
		out[f.Name] = value(f)
	}
	return out
}

func value(f sis.RefField) any {
	if len(f.Attrs) == 0 && len(f.Children) == 0 {
		return scalar(f.Name, f.Value)
	}
	o := object(f.Children)
	for _, a := range f.Attrs {
		o["@"+a.Name] = strings.TrimSpace(a.Value)
	}
	if f.Value != "" || len(f.Children) == 0 {
		o["value"] = scalar(f.Name, f.Value)
	}
	return o
}

func scalar(name, v string) any {
	switch {
	case flags[name]:
		return strings.EqualFold(v, "Y")
	case numbers[name]:
		if v == "" {
			return nil
		}
		if isDecimal(v) {
			return json.Number(strings.TrimPrefix(v, "+"))
		}
	}
	return v
}

// isDecimal reports whether v is [+-]digits[.digits] (a valid JSON number once "+" is dropped,
// leading zeros aside).
func isDecimal(v string) bool {
	if v != "" && (v[0] == '-' || v[0] == '+') {
		v = v[1:]
	}
	intPart, frac, hasDot := strings.Cut(v, ".")
	if intPart == "" || (hasDot && frac == "") || (len(intPart) > 1 && intPart[0] == '0') {
		return false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
		}
	}
	return true
}
