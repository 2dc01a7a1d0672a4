package console

import (
	"time"

	"github.com/msgx/msgx/pkg/status"
)

// Verdict is the pipeline's health in one word and the reasons for it (status.Verdict).
type Verdict = status.Verdict

// verdict judges a snapshot (status.Snapshot.Verdict).
func verdict(s status.Snapshot, lease time.Duration) Verdict { return s.Verdict(lease) }
