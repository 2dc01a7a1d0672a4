package request

// SetStep installs the send-step hook (crash injection in tests).
func (s *Sender) SetStep(f func(name string) error) { s.step = f }
