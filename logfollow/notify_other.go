//go:build !linux

package logfollow

// Notified reports whether fsnotify tells of every change made in dir, so
// that no slow look is needed beside it; off Linux flower does not know
// the file systems' ways, and keeps the look.
func Notified(dir string) bool { return false }
