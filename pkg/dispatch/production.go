package dispatch

import "github.com/msgx/msgx/pkg/envconf"

// ProductionRefusals are the dispatcher settings production refuses: the send-hold test hook.
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.HoldFile != "" {
		p.Add("MSGX_DEV_HOLD_SEND", "a test hook; production refuses it")
	}
	return p.Err()
}
