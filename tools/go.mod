module github.com/msgx/msgx/tools

go 1.26.8

tool (
	github.com/msgx/msgx/tools/dbmate-pg
	golang.org/x/perf/cmd/benchstat
)

require github.com/amacneil/dbmate/v2 v2.26.0

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/lib/pq v1.10.9 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
)
