// Package jsonenc appends JSON values to a byte slice as encoding/json's
// Marshal writes them, byte for byte (compact, HTML-safe strings, map keys
// in order), without its reflection: for what flower writes on every
// decision of a step, where encoding by reflection cost more than the
// write (DESIGN.md «Manifest»).
package jsonenc

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendTime is time.Time's MarshalJSON: RFC 3339 with nanoseconds, and
// its error for a year it cannot write.
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, err
	}
	return append(b, '"'), nil
}

// AppendFloat is encoding/json's float64: the shortest form that reads
// back, exponent form only for the very small and the very large, and an
// error for NaN and infinity.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// AppendString is encoding/json's string with HTML escaping on: ", \,
// control characters, <, > and &, U+2028 and U+2029 escaped, and bytes
// that are not UTF-8 written as U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendValue appends v: nil, a bool, a string, an int, a float64, a
// map[string]any (its keys sorted), a slice of any, string or
// map[string]any, a json.RawMessage as it is, and anything else by
// encoding/json.
func AppendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return AppendString(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		return AppendFloat(b, x)
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil
		}
		return append(b, x...), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		var small [16]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			if b, err = AppendValue(b, x[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		return appendList(b, x)
	case []string:
		return appendList(b, x)
	case []map[string]any:
		return appendList(b, x)
	}
	raw, err := json.Marshal(v)
	return append(b, raw...), err
}

func appendList[T any](b []byte, v []T) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendValue(b, v[i]); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// Marshal is encoding/json's Marshal of v by AppendValue.
func Marshal(v any) ([]byte, error) {
	return AppendValue(nil, v)
}
