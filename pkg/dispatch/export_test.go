package dispatch

// LagSampled is lagSampled, for the tests of the lag's sample.
var LagSampled = lagSampled
