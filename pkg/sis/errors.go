package sis

import (
	"strconv"
	"unicode/utf8"

	"github.com/msgx/msgx/pkg/clip"
)

// Class is the pipeline error class of a decode failure (docs/spec.md §5).
type Class string

// Error classes.
const (
	// ClassMalformed: not well-formed XML, trailing content after the root, a
	// DOCTYPE/entity, invalid UTF-8 under a UTF-8 declaration, nesting too deep, missing MSG/META/TYPE/STYP
	// or a missing body for a kind that needs one. DEAD at once.
	ClassMalformed Class = "MALFORMED"
	// ClassProtocol: well-formed but breaks the SIS contract (required field
	// missing, bad enum, bad date, length limit, RECS mismatch...). DEAD at once.
	ClassProtocol Class = "PROTOCOL"
	// ClassCodec: a construct the codec does not handle yet (unknown element,
	// several bodies, an encoding msgx does not read, message above MaxBytes).
	// Replayable.
	ClassCodec Class = "CODEC_ERROR"
)

// Error is the only error type Decode returns. Path names the element
// (`MSG/FLOP/FDIV@DDIR`, records 1-based: `MSG/SCHD/FLTR[2]/SODT`) and Value the
// offending value (shortened to 64 characters).
type Error struct {
	Class Class
	Path  string
	Value string
	Msg   string
}

func (e *Error) Error() string {
	return string(e.Class) + " at " + e.Path + ": " + e.Msg + " (value " + strconv.Quote(e.Value) + ")"
}

// ValuePattern is a regular expression (RE2 and POSIX alike: Go and PostgreSQL) matching the
// offending value an Error's text carries, ` (value "…")` Go-quoted: readers of stored reasons
// group errors by what went wrong without it.
const ValuePattern = ` \(value "([^"\\]|\\.)*"\)`

const maxErrValue = 64

func newErr(c Class, path, value, msg string) *Error {
	if !utf8.ValidString(value) {
		value = strconv.Quote(value)
	}
	return &Error{Class: c, Path: path, Value: clip.String(value, maxErrValue), Msg: msg}
}

func malformed(path, value, msg string) *Error { return newErr(ClassMalformed, path, value, msg) }
func protocol(path, value, msg string) *Error  { return newErr(ClassProtocol, path, value, msg) }
func codecErr(path, value, msg string) *Error  { return newErr(ClassCodec, path, value, msg) }
