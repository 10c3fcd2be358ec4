package codexrpc

import "github.com/flowerhq/flower/fifo"

// Queue holds notifications in order, unbounded, for one reader: the
// client's, so that reading stdout never waits on the caller, and a
// scripted app-server's in the tests. Its zero value is ready to use.
type Queue = fifo.Queue[Notification]
