module github.com/msgx/msgx/tools

go 1.26.8

tool (
	github.com/msgx/msgx/tools/dbmate-pg
	github.com/msgx/msgx/tools/ociimage
	golang.org/x/perf/cmd/benchstat
)

require (
	github.com/amacneil/dbmate/v2 v2.26.0
	github.com/google/go-containerregistry v0.22.1
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/lib/pq v1.10.9 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/sync v0.22.0 // indirect
)
