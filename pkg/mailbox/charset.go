package mailbox

import (
	"context"
	"errors"
	"fmt"
)

// Charsets are the character sets between msgx and the mailbox's text columns
// (docs/ingest.md, "Mailbox text encodings"). msgx talks utf8mb4: the server converts what it
// reads from a column's charset (a Chinese AODB's gbk table arrives as UTF-8 under the
// message's GB2312/GBK declaration, which pkg/sis reads) and what it writes to it. The
// outbound requests are ASCII (pkg/sis), the same bytes in every charset the column may have.
type Charsets struct {
	// Connection and Results are @@character_set_connection and @@character_set_results
	// ("" when results are not converted).
	Connection, Results string
	// Inbound and Outbound are the charsets of CMINMSGS_CLOB_MSG and COUTMSGS_CLOB_MSG:
	// "binary" for a binary column (its bytes arrive as stored), "" when not visible.
	Inbound, Outbound string
}

// ErrCharset means the mailbox connection does not exchange text in utf8mb4.
var ErrCharset = errors.New("mailbox connection charset")

// Charsets reads the character sets in use on a mailbox connection.
func (m *Mailbox) Charsets(ctx context.Context) (Charsets, error) {
	var c Charsets
	if err := m.db.QueryRowContext(ctx, charsetsSQL).Scan(&c.Connection, &c.Results, &c.Inbound, &c.Outbound); err != nil {
		return Charsets{}, fmt.Errorf("read mailbox charsets: %w", err)
	}
	return c, nil
}

// Check refuses a connection that does not send and receive utf8mb4: text would arrive in
// another charset than its bytes say (or lose characters outside the BMP) and the compat
// entry's UTF-8 would be misread. A server that ignores the client's handshake charset
// (skip-character-set-client-handshake) needs charset=utf8mb4 in MSGX_MYSQL_DSN.
func (c Charsets) Check() error {
	if c.Connection != "utf8mb4" || c.Results != "utf8mb4" {
		return fmt.Errorf("%w: connection %q, results %q; msgx needs utf8mb4 (add charset=utf8mb4 to MSGX_MYSQL_DSN)",
			ErrCharset, c.Connection, c.Results)
	}
	return nil
}

// Warning describes a column charset that works only if the AODB uses it as its name says,
// or "" when there is nothing to say.
func (c Charsets) Warning() string {
	if c.Inbound == "latin1" {
		return "cminmsgs text column is latin1: Chinese text stored in it as GBK bytes arrives misread as Latin-1; make the column gbk (or binary)"
	}
	return ""
}
