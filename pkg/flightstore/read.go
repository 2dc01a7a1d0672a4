package flightstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/flight"
)

// ReadOnly is the transaction of an operator's or a client's read: one snapshot, no writes.
var ReadOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// Beginner begins transactions (a *pgxpool.Pool).
type Beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

var _ Beginner = (*pgxpool.Pool)(nil)

// Read is the current state of one flight as msgx publishes it and the read API serves it
// (flight.State.AppendJSON, MAFL included), read with Load in a ReadOnly transaction; nil when
// the flight is not stored (never was, or purged).
func Read(ctx context.Context, db Beginner, flid int64) (*flight.State, error) {
	var s *flight.State
	err := pgx.BeginTxFunc(ctx, db, ReadOnly, func(tx pgx.Tx) error {
		l, err := Load(ctx, tx, []int64{flid})
		s = l.States[flid]
		return err
	})
	return s, err
}
