package mailbox

import "strings"

// Every statement msgx runs against the mailbox, with bound parameters only. Column names are the
// AODB's legacy schema (docs/spec.md §3.1).

const (
	// readAfterSQL is ingest's discovery read (docs/spec.md §4): rows after the watermark in id order. It
	// never looks at the processed marker (INV-5).
	readAfterSQL = `SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED
  FROM cminmsgs
 WHERE CMINMSGS_ID > ?
 ORDER BY CMINMSGS_ID
 LIMIT ?`

	// probeSelectSQL and probeRangeSQL build the re-probe of skipped ids (see probeSQL).
	probeSelectSQL = `SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED
  FROM cminmsgs
 WHERE `
	probeRangeSQL = `(CMINMSGS_ID BETWEEN ? AND ?)`
	probeOrderSQL = `
 ORDER BY CMINMSGS_ID
 LIMIT ?`

	// insertSQL is the compat entry's insert (docs/spec.md §4): STATUS 'VALID' as every legacy writer does.
	insertSQL = `INSERT INTO cminmsgs
       (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
        CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)

// statusValid is CMINMSGS_STATUS of a newly inserted row.
const statusValid = "VALID"

// probeSQL returns the re-probe statement for n id ranges: n (BETWEEN ? AND ?) terms joined by OR,
// then the limit. Its parameters are from1, to1, …, fromN, toN, limit.
func probeSQL(n int) string {
	var b strings.Builder
	b.WriteString(probeSelectSQL)
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(probeRangeSQL)
	}
	b.WriteString(probeOrderSQL)
	return b.String()
}

// The outbound requests (docs/sis.md §f.4, docs/requests.md): coutmsgs rows with DATE_INSERTED,
// ROUTINGID and the message; the six flag columns keep their defaults (0) and DATE_SENT, ACK and
// the group columns stay NULL for the AODB's transport.
const (
	insertOutboundSQL = `INSERT INTO coutmsgs (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID) VALUES (?, ?, ?)`

	// findOutboundSQL looks an outbound message up by its exact text (its META is the request's
	// token) among the rows of its ROUTINGID inserted since a bound. coutmsgs has no index but its
	// primary key, so this scans the table; it runs once per request sent.
	findOutboundSQL = `SELECT COUTMSGS_ID, COUTMSGS_DATE_INSERTED FROM coutmsgs
 WHERE ROUTINGID = ? AND COUTMSGS_DATE_INSERTED >= ? AND COUTMSGS_CLOB_MSG = ?
 ORDER BY COUTMSGS_ID
 LIMIT 1`

	// recentOutboundSQL reads the outbound rows of a ROUTINGID inserted since a bound (a scan, as
	// findOutboundSQL), for the requests' look-up of rows whose tracking row a failover lost.
	recentOutboundSQL = `SELECT COUTMSGS_ID, COUTMSGS_DATE_INSERTED, COUTMSGS_CLOB_MSG FROM coutmsgs
 WHERE ROUTINGID = ? AND COUTMSGS_DATE_INSERTED >= ?
 ORDER BY COUTMSGS_ID`

	// outboundSentSQLPrefix reads the transport's COUTMSGS_DATE_SENT of n rows (see outboundSentSQL).
	outboundSentSQLPrefix = `SELECT COUTMSGS_ID, COUTMSGS_DATE_SENT FROM coutmsgs WHERE COUTMSGS_DATE_SENT IS NOT NULL AND COUTMSGS_ID IN (?`
)

// outboundSentSQL reads COUTMSGS_DATE_SENT for n ids; parameters id1 … idN.
func outboundSentSQL(n int) string {
	return outboundSentSQLPrefix + strings.Repeat(",?", n-1) + ")"
}

// charsetsSQL reads the character sets between msgx and the mailbox text columns: the
// connection's (what msgx sends and receives) and each column's (binary for a binary column,
// empty when the table is missing or not visible to the account).
const charsetsSQL = `SELECT @@character_set_connection, COALESCE(@@character_set_results, ''),
       COALESCE((SELECT COALESCE(CHARACTER_SET_NAME, 'binary') FROM information_schema.COLUMNS
                  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'cminmsgs' AND COLUMN_NAME = 'CMINMSGS_CLOB_MSG'), ''),
       COALESCE((SELECT COALESCE(CHARACTER_SET_NAME, 'binary') FROM information_schema.COLUMNS
                  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'coutmsgs' AND COLUMN_NAME = 'COUTMSGS_CLOB_MSG'), '')`

// The gap proof's reads (Mailbox.Transactions): InnoDB's list of open transactions, which needs
// the PROCESS privilege. They run on one connection, in this order: the prepared XA transactions,
// then a REPEATABLE READ transaction whose snapshot is taken at its start (so the reader's own
// transaction is in the list, and the highest id is that of the snapshot), then the list itself.
const (
	xaRecoverSQL     = `XA RECOVER`
	trxIsolationSQL  = `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`
	trxStartSQL      = `START TRANSACTION WITH CONSISTENT SNAPSHOT`
	trxEndSQL        = `COMMIT`
	trxEndOnErrorSQL = `ROLLBACK`

	// trxListSQL returns one row per open InnoDB transaction (the reader's own marked), each with
	// the database's clock, the highest committed mailbox id of the reader's snapshot, whether
	// the server may be a replica or one of several writers (read_only, an auto-increment step),
	// and cminmsgs' storage engine (INNODB_TRX lists InnoDB's transactions only). Its %s is the
	// read's nonce, a comment that the reader's own row shows as its running statement
	// (trx_query): a row of its connection only counts as its own when it shows this very read
	// ($1: a LIKE pattern of the nonce), since InnoDB's cached copy of an earlier read on the same
	// pooled connection shows that connection too.
	trxListSQL = `SELECT /* msgx trx-list %s */ NOW(6), COALESCE((SELECT MAX(CMINMSGS_ID) FROM cminmsgs), 0),
       @@global.read_only, @@global.auto_increment_increment,
       COALESCE((SELECT ENGINE FROM information_schema.TABLES
                  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'cminmsgs'), ''),
       COALESCE(t.trx_mysql_thread_id = CONNECTION_ID() AND t.trx_query LIKE ?, FALSE),
       t.trx_started, t.trx_state, t.trx_mysql_thread_id,
       t.trx_is_read_only, t.trx_autocommit_non_locking
  FROM information_schema.INNODB_TRX AS t`
)
