package processor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/msgx/msgx/pkg/dev/corpus"
)

// BenchmarkPrepare decodes the FLOP samples round-robin and computes their identities as a batch
// does before its transaction (prepare: the digest of the text, the decode, the identity key).
func BenchmarkPrepare(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(corpus.Dir(), "FLOP", "*.xml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no FLOP samples: %v", err)
	}
	raws := make([]string, len(files))
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = string(raw)
	}
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		b.Fatal(err)
	}
	p := &Engine{cfg: Config{Location: loc}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w := p.prepare(headRow{id: int64(i + 1), raw: &raws[i%len(raws)]})
		if w.decErr != nil {
			b.Fatal(w.decErr)
		}
		i++
	}
}
