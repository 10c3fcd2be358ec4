// Package transcript owns reading what the harness says: its stream-json
// output on stdout (and, for interactive sessions, the same records in the
// transcript file on disk). It splits the byte stream into lines of any
// length, decodes the fields flower needs with gjson, and keeps the
// main-thread context meter (DESIGN.md «Context meter», «Harness facts»).
package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine bounds one line. Tool results make lines of many megabytes;
// past this bound a line is drained and reported, never buffered whole.
const DefaultMaxLine = 256 << 20

// ErrLineTooLong is returned (wrapped in a *LineError) for a line longer than
// the reader's bound. The reader stays usable: the next call returns the next
// line.
var ErrLineTooLong = errors.New("line too long")

// LineError describes a line that was skipped.
type LineError struct {
	Line int   // 1-based line number in the stream
	Size int64 // bytes in the line, without the newline
	Err  error
}

// Error describes the failure; it is what a person sees.
func (e *LineError) Error() string {
	return fmt.Sprintf("line %d (%d bytes): %v", e.Line, e.Size, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *LineError) Unwrap() error { return e.Err }

// LineReader splits a stream into newline-terminated lines of unbounded
// length (up to a limit), unlike bufio.Scanner whose default stops at 64 KiB.
type LineReader struct {
	r    *bufio.Reader
	max  int
	n    int
	buf  []byte
	done bool
}

// NewLineReader reads lines from r, each at most maxLine bytes
// (DefaultMaxLine when maxLine <= 0).
func NewLineReader(r io.Reader, maxLine int) *LineReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: maxLine}
}

// Next returns the next line without its trailing "\n" or "\r\n". The slice
// is valid until the following call. A final line without a newline is
// returned too (a child that crashed mid-line leaves one). At the end of the
// stream it returns io.EOF; a read error is returned as is. A line over the
// limit is skipped and reported as a *LineError wrapping ErrLineTooLong.
func (lr *LineReader) Next() ([]byte, error) {
	if lr.done {
		return nil, io.EOF
	}
	lr.buf = lr.buf[:0]
	var size int64
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += int64(len(chunk))
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+2 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			lr.n++
			line := trimEOL(lr.buf)
			if tooLong || len(line) > lr.max {
				return nil, &LineError{Line: lr.n, Size: size - 1, Err: ErrLineTooLong}
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			lr.done = true
			if size == 0 {
				return nil, io.EOF
			}
			lr.n++
			line := trimEOL(lr.buf)
			if tooLong || len(line) > lr.max {
				return nil, &LineError{Line: lr.n, Size: size, Err: ErrLineTooLong}
			}
			return line, nil
		default:
			lr.done = true
			return nil, err
		}
	}
}

// Lines returns how many lines (including skipped ones) have been read.
func (lr *LineReader) Lines() int { return lr.n }

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
