package manifest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// The encoder writes what encoding/json writes, for manifests with every
// field of every type filled at random (or left zero, nil or empty, each
// in its turn): a field added to a type and not to the encoder fails here.
func TestEncoderIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	e := &encoder{}
	for i := range 3000 {
		m := &Manifest{}
		fill(r, reflect.ValueOf(m).Elem(), 0)
		for _, s := range m.Steps {
			if s != nil {
				s.normalize()
			}
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("manifest %d: encoding/json: %v", i, err)
		}
		got, err := e.encode(m)
		if err != nil {
			t.Fatalf("manifest %d: %v", i, err)
		}
		if string(got) != string(want)+"\n" {
			t.Fatalf("manifest %d: the encoder writes\n%s\nencoding/json writes\n%s", i, got, want)
		}
	}
}

// What encoding/json cannot write, the encoder refuses too.
func TestEncoderRefusesWhatJSONCannotWrite(t *testing.T) {
	for _, m := range []*Manifest{
		{Probe: &Probe{Seconds: math.NaN()}},
		{Steps: []*StepResult{{CostUSD: math.Inf(1)}}},
		{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, err := json.Marshal(m); err == nil {
			t.Fatalf("encoding/json writes %+v", m)
		}
		if got, err := (&encoder{}).encode(m); err == nil {
			t.Fatalf("the encoder writes %s", got)
		}
	}
}

var zones = []*time.Location{time.UTC, time.FixedZone("", -7*3600-30*60), time.FixedZone("x", 14*3600)}

// fill sets v, at random, to a value of its type: zero about a quarter of
// the time, so that omitempty and null are written as often as values.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if r.IntN(4) == 0 {
		return
	}
	switch v.Interface().(type) {
	case time.Time:
		t := time.Unix(r.Int64N(1<<35)-1<<33, r.Int64N(2e9)%1e9).In(zones[r.IntN(len(zones))])
		if r.IntN(3) == 0 {
			t = t.Truncate(time.Second)
		}
		v.Set(reflect.ValueOf(t))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Int:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(randFloat(r))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		n := r.IntN(4)
		if depth > 2 {
			n = r.IntN(2)
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	default:
		panic("fill: no values for " + v.Type().String())
	}
}

var pieces = []string{"a", "task ", "交接-main.md", `"`, `\`, "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
	"\u2028", "\u2029", "\xff", "\xe4\xba", "é", "😀", "/", "'", "\u00e9\u0301"}

func randString(r *rand.Rand) string {
	var s string
	for range r.IntN(6) {
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return r.Float64() * 1e-7
	case 1:
		return r.Float64() * 1e22
	case 2:
		return -r.Float64() * 100
	case 3:
		return float64(r.IntN(1000))
	case 4:
		return math.SmallestNonzeroFloat64 * float64(r.IntN(10)+1)
	default:
		return r.Float64()
	}
}
