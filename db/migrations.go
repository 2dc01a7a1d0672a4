// Package db holds msgx's PostgreSQL migrations (dbmate format) so that binaries, the
// Kubernetes migration Job and tests apply exactly the files in db/migrations.
package db

import "embed"

// Migrations holds db/migrations/*.sql, each with "-- migrate:up" and "-- migrate:down" parts.
//
//go:embed migrations/*.sql
var Migrations embed.FS
