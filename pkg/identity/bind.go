package identity

import (
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// Key is a message's identity key: SNDR|TYPE|STYP|SEQN, plus |YYYYMMDD of its DTTM when the rule
// includes the day.
func (r Rule) Key(m sis.Meta) string {
	key := m.SNDR + "|" + m.TYPE + "|" + m.STYP + "|" + m.SEQN
	if r.IncludeDay {
		key += "|" + m.DTTM.Format("20060102")
	}
	return key
}

// Binding is the message a key is bound to (a msg_identity row): its msg_id, the SHA-256 of its
// text and its DTTM.
type Binding struct {
	MsgID  int64
	SHA256 []byte
	DTTM   time.Time
}

// Claim is a message asking for its key: the key and the binding it would make.
type Claim struct {
	Key string
	Binding
}

// Verdict is what the binding rule decided for one claim.
type Verdict struct {
	Dup    *Binding // the message it duplicates (nil: none): its key is bound to it within the window
	Reused bool     // its key was bound to a message outside the window (a SEQN reset or wrap)
}

// Bind applies the binding rule (PRE-7b: within the identity window) to claims in msg_id order. bound holds
// the keys' current bindings; Bind updates it to the bindings after the claims. A key not bound
// yet binds to its message. A key bound to the message itself (a retry or a replay) changes
// nothing. A key bound to a message whose DTTM is within the window of this one's makes it a
// duplicate of that message. A key bound outside the window was reused: the message is a new one
// and, when it is the newer of the two, the key is bound to it again. A claim with an empty key
// gets the zero Verdict. Bind returns one verdict per claim and the bindings that changed, one
// per key in the order of its first change (the rows to store).
func (r Rule) Bind(bound map[string]Binding, claims []Claim) ([]Verdict, []Claim) {
	verdicts := make([]Verdict, len(claims))
	changed := map[string]int{} // key → index in out
	var out []Claim
	for i, c := range claims {
		if c.Key == "" {
			continue
		}
		b, ok := bound[c.Key]
		switch {
		case ok && b.MsgID == c.MsgID:
			continue
		case ok && r.Same(b.DTTM, c.DTTM):
			verdicts[i].Dup = &b
			continue
		case ok:
			verdicts[i].Reused = true
			if !c.DTTM.After(b.DTTM) {
				continue // an older message with a reused key: a new message, the newer keeps the key
			}
		}
		bound[c.Key] = c.Binding
		if j, seen := changed[c.Key]; seen {
			out[j] = c
			continue
		}
		changed[c.Key] = len(out)
		out = append(out, c)
	}
	return verdicts, out
}
