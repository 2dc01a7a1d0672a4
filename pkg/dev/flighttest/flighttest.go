// Package flighttest builds flight states for tests and benchmarks.
package flighttest

import (
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/flight"
)

// FillFields sets every time, integer and text field of s: times a minute apart from at,
// integers and texts from the field's index (text "A<index>"); the other kinds stay as they are.
func FillFields(s *flight.State, at time.Time) {
	for f := range s.F {
		switch flight.Fields[f].Kind {
		case flight.KindTime:
			s.F[f] = flight.Time(at.Add(time.Duration(f) * time.Minute))
		case flight.KindInt:
			s.F[f] = flight.Int(int64(f))
		case flight.KindText:
			s.F[f] = flight.Text("A" + strconv.Itoa(f))
		}
	}
}
