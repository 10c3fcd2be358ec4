package supervisor

// The engine's own tests fail on a move its table lacks.
func init() { StrictTransitions = true }
