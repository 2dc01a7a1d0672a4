// Package simulate generates a realistic, deterministic airport day of SIS XML
// messages (docs/sis.md) for tests, the demo and the benchmark, keeps the
// expected final flight states of what it sent, and writes the messages into
// the legacy mailbox with concurrent, out-of-order commits. It is a test and
// development tool: production never imports it.
//
// Generation (Generate):
//
//	seed ──► reference lists (DNLD) ──► schedule snapshot (SCHD DNLD, N flights)
//	     ──► per-flight plans (events with times) ──► sorted by time
//	     ──► each event renders its FLOP/ADFT from the model's current state,
//	         is emitted with the next SEQN and applied to the model
//	     ──► bad messages injected after operational ones (BadShare)
//	     ──► Day{Messages, Expected}
//
// Writing (Writer): INSERTs in send order (ids follow send order), commits
// overlapping and reordered; see Writer.
package simulate
