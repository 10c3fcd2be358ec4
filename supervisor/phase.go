package supervisor

// String names the phase in log records (package runlog stamps it).
func (p phase) String() string {
	switch p {
	case phaseCutting:
		return "cutting"
	case phaseWriting:
		return "writing"
	}
	return "working"
}
