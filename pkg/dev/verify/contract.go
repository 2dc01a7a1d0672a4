package verify

import (
	"fmt"

	"github.com/msgx/msgx/pkg/contract"
	"github.com/msgx/msgx/pkg/dev/stack"
)

// Contract validates every record of recs against the JSON Schemas of docs/contract (key,
// headers, value); a record of a topic the contract does not name is a problem too. It returns
// the problems and how many records it validated.
func Contract(recs []stack.Record) ([]string, int) {
	v, err := contract.NewValidator()
	if err != nil {
		return []string{"the contract's schemas: " + err.Error()}, 0
	}
	var bad []string
	for _, r := range recs {
		if err := v.Record(r.Topic, r.FLID, r.Headers, r.Value); err != nil {
			bad = append(bad, fmt.Sprintf("%s/%d@%d FLID %s: %v", r.Topic, r.Partition, r.Offset, r.FLID, err))
		}
	}
	return bad, len(recs)
}
