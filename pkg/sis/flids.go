package sis

import "slices"

// FLIDs lists the flights the message names, ascending and without repeats: a FLOP's FLID and
// every schedule record's FLID that has a value. Other bodies name none.
func (m *Message) FLIDs() []int64 {
	var out []int64
	if m.Flop != nil {
		out = append(out, m.Flop.FLID)
	}
	if m.Schedule != nil {
		for i := range m.Schedule.Records {
			if v, ok := m.Schedule.Records[i].FLID.Get(); ok {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
