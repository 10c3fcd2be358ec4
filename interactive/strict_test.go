package interactive

import "github.com/flowerhq/flower/supervisor"

// The engine runs in these tests: a move its table lacks fails them.
func init() { supervisor.StrictTransitions = true }
