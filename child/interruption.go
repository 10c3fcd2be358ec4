package child

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// Interruption is the cause of a run cancelled by a signal (the person's
// Ctrl-C, flower stop's SIGTERM): it is context.Canceled to the code, and
// says which signal to a person, in the same words on every front.
type Interruption struct{ Signal os.Signal }

func (e Interruption) Error() string {
	switch e.Signal {
	case os.Interrupt:
		return "by Ctrl-C"
	case syscall.SIGTERM:
		return "by SIGTERM (flower stop, or kill)"
	}
	return fmt.Sprintf("by %v", e.Signal)
}

func (e Interruption) Is(target error) bool { return target == context.Canceled }
