package jsonenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var pieces = []string{"a", "type", "交接", `"`, `\`, "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
	"\u2028", "\u2029", "\xff", "\xe4\xba", "é", "😀", "/"}

func randString(r *rand.Rand) string {
	var s string
	for range r.IntN(5) {
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(12)
	if depth > 3 && k >= 8 {
		k = r.IntN(8)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return randString(r)
	case 4:
		return r.IntN(1<<20) - 1<<19
	case 5:
		return []float64{r.Float64() * 1e-7, r.Float64() * 1e22, -r.Float64(), float64(r.IntN(100)), 0}[r.IntN(5)]
	case 6:
		return time.Unix(r.Int64N(1<<33), r.Int64N(1e9)).UTC()
	case 7:
		return []string{randString(r), randString(r)}[:r.IntN(3)]
	case 8, 9:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randString(r)] = randValue(r, depth+1)
		}
		return m
	case 10:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randValue(r, depth+1)
		}
		return l
	default:
		l := make([]map[string]any, r.IntN(3))
		for i := range l {
			l[i] = map[string]any{"k": randValue(r, depth+1)}
		}
		return l
	}
}

// Every value AppendValue takes is written as encoding/json writes it.
func TestAppendValueIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		v := randValue(r, 0)
		want, werr := json.Marshal(v)
		got, err := Marshal(v)
		if (err != nil) != (werr != nil) || string(got) != string(want) {
			t.Fatalf("value %d (%#v):\n got %s, %v\nwant %s, %v", i, v, got, err, want, werr)
		}
	}
	for _, v := range []any{map[string]any(nil), []any(nil), []string(nil), json.RawMessage(`{"a":1}`), json.RawMessage(nil), struct{ A int }{1}, uint8(7)} {
		want, _ := json.Marshal(v)
		if got, err := Marshal(v); err != nil || string(got) != string(want) {
			t.Fatalf("%#v: got %s, %v; want %s", v, got, err, want)
		}
	}
}

func TestAppendValueRefusesWhatJSONCannotWrite(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(-1), map[string]any{"a": []any{math.Inf(1)}}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := json.Marshal(v); err == nil {
			t.Fatalf("encoding/json writes %v", v)
		}
		if got, err := Marshal(v); err == nil {
			t.Fatalf("AppendValue writes %s", got)
		}
	}
}
