package request

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/mailbox/outbound"
)

// A failover of PostgreSQL that loses its last transactions can lose a request's req_track row
// (and the SEQN counter's last advances) while its coutmsgs row, in MySQL, stays. Before a
// request is written, the sender looks at the mailbox's recent outbound rows that no request
// records: one that asks exactly what this request asks (the text but for META SEQN and DTTM) is
// that lost request, and is adopted instead of asking again; and a SEQN the mailbox shows in use
// is not used again for another request within the look-back.

var (
	seqnRe = regexp.MustCompile(`<SEQN>(\d+)</SEQN>`)
	dttmRe = regexp.MustCompile(`<DTTM>(\d{14})</DTTM>`)
)

// meta returns an outbound text's META SEQN and DTTM.
func meta(text string) (seqn int, dttm string, ok bool) {
	s, d := seqnRe.FindStringSubmatch(text), dttmRe.FindStringSubmatch(text)
	if s == nil || d == nil {
		return 0, "", false
	}
	n, err := strconv.Atoi(s[1])
	return n, d[1], err == nil
}

// withMeta is text with META SEQN and DTTM replaced.
func withMeta(text string, seqn int, dttm string) string {
	text = seqnRe.ReplaceAllLiteralString(text, fmt.Sprintf("<SEQN>%06d</SEQN>", seqn))
	return dttmRe.ReplaceAllLiteralString(text, "<DTTM>"+dttm+"</DTTM>")
}

// RecentOutbox is what the look-up needs of the mailbox besides Outbox.
type RecentOutbox interface {
	RecentOutbound(ctx context.Context, routingID string, since time.Time) ([]outbound.Listed, error)
}

// reconcile runs, inside the send's transaction, before request r is written. It returns the
// orphan row r adopts (ok), or r with the SEQN it must use (another one when the mailbox shows
// r's in use by a row r is not).
func (s *Sender) reconcile(ctx context.Context, tx pgx.Tx, r Request) (Request, outbound.Row, bool, error) {
	recent, ok := s.out.(RecentOutbox)
	if !ok {
		return r, outbound.Row{}, false, nil
	}
	rows, err := recent.RecentOutbound(ctx, r.RoutingID, r.DTTM.Add(-lookBack))
	if err != nil || len(rows) == 0 {
		return r, outbound.Row{}, false, err
	}
	ids := make([]int64, len(rows))
	for i, o := range rows {
		ids[i] = o.ID
	}
	known, err := collectIDs(tx.Query(ctx, knownOutSQL, ids))
	if err != nil {
		return r, outbound.Row{}, false, fmt.Errorf("look up the requests of recent coutmsgs rows: %w", err)
	}
	used, top := false, 0
	for _, o := range rows {
		seqn, dttm, ok := meta(o.Text)
		if !ok {
			continue
		}
		if !slices.Contains(known, o.ID) && withMeta(r.XML, seqn, dttm) == o.Text {
			return s.adopt(ctx, tx, r, o, seqn, dttm)
		}
		used = used || seqn == r.SEQN
		top = max(top, seqn)
	}
	if !used {
		return r, outbound.Row{}, false, nil
	}
	return s.renumber(ctx, tx, r, top)
}

// adopt makes r the request of orphan row o: its SEQN, DTTM and text become o's.
func (s *Sender) adopt(ctx context.Context, tx pgx.Tx, r Request, o outbound.Listed, seqn int, dttm string) (Request, outbound.Row, bool, error) {
	at, err := time.ParseInLocation("20060102150405", dttm, s.store.cfg.Location)
	if err != nil {
		return r, outbound.Row{}, false, fmt.Errorf("adopt coutmsgs row %d: %w", o.ID, err)
	}
	if _, err := tx.Exec(ctx, reMetaSQL, r.ID, seqn, at, o.Text); err != nil {
		return r, outbound.Row{}, false, fmt.Errorf("adopt coutmsgs row %d: %w", o.ID, err)
	}
	r.SEQN, r.DTTM, r.XML = seqn, at, o.Text
	return r, o.Row, true, nil
}

// renumber gives r a SEQN above top (the highest the mailbox shows) and the counter's.
func (s *Sender) renumber(ctx context.Context, tx pgx.Tx, r Request, top int) (Request, outbound.Row, bool, error) {
	var seqn int
	if err := tx.QueryRow(ctx, raiseSEQNSQL, top).Scan(&seqn); err != nil {
		return r, outbound.Row{}, false, fmt.Errorf("renumber request %d: %w", r.ID, err)
	}
	_, dttm, _ := meta(r.XML)
	xml := withMeta(r.XML, seqn, dttm)
	if _, err := tx.Exec(ctx, reMetaSQL, r.ID, seqn, r.DTTM, xml); err != nil {
		return r, outbound.Row{}, false, fmt.Errorf("renumber request %d: %w", r.ID, err)
	}
	r.SEQN, r.XML = seqn, xml
	return r, outbound.Row{}, false, nil
}
