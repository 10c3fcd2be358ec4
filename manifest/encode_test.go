package manifest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// A save writes what encoding/json writes, for manifests with every
// field of every type filled at random (or left zero, nil or empty, each
// in its turn), and keeps doing so as they change between saves: a field,
// anywhere in a generation (behind its pointers, in its lists), a step's
// own, a generation added, a step added or dropped.
func TestCachedIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 600 {
		m := &Manifest{}
		fill(r, reflect.ValueOf(m).Elem(), 0)
		for save := range 8 {
			for _, s := range m.Steps {
				if s != nil {
					s.normalize()
				}
			}
			want, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("manifest %d: encoding/json: %v", i, err)
			}
			got, err := m.enc.encode(m)
			if err != nil {
				t.Fatalf("manifest %d, save %d: %v", i, save, err)
			}
			if string(got) != string(want)+"\n" {
				t.Fatalf("manifest %d, save %d: the save writes\n%s\nencoding/json writes\n%s", i, save, got, want)
			}
			change(r, m)
		}
	}
}

// change changes one thing of m at random, most often deep in one of its
// generations.
func change(r *rand.Rand, m *Manifest) {
	var steps []*StepResult
	for _, s := range m.Steps {
		if s != nil {
			steps = append(steps, s)
		}
	}
	switch n := r.IntN(10); {
	case len(steps) == 0 || n == 0:
		s := &StepResult{}
		fill(r, reflect.ValueOf(s).Elem(), 1)
		m.Steps = append(m.Steps, s)
	case n == 1:
		m.Steps = m.Steps[1:]
	case n == 2:
		s := steps[r.IntN(len(steps))]
		s.Generations = append(s.Generations, Generation{N: len(s.Generations) + 1})
	case n == 3:
		into(r, reflect.ValueOf(steps[r.IntN(len(steps))]).Elem())
	default:
		s := steps[r.IntN(len(steps))]
		if len(s.Generations) == 0 {
			s.Generations = append(s.Generations, Generation{})
		}
		into(r, reflect.ValueOf(&s.Generations[r.IntN(len(s.Generations))]).Elem())
	}
}

// into fills one exported field of the struct v afresh, or goes on into
// what the field points at or holds.
func into(r *rand.Rand, v reflect.Value) {
	for {
		var fields []int
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fields = append(fields, i)
			}
		}
		f := v.Field(fields[r.IntN(len(fields))])
		switch {
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct && r.IntN(2) == 0:
			if _, isTime := f.Interface().(*time.Time); !isTime {
				v = f.Elem()
				continue
			}
		case f.Kind() == reflect.Slice && f.Len() > 0 && f.Index(0).Kind() == reflect.Struct && r.IntN(2) == 0:
			v = f.Index(r.IntN(f.Len()))
			continue
		case f.Kind() == reflect.Slice && f.Len() > 0 && r.IntN(2) == 0:
			fill(r, f.Index(r.IntN(f.Len())), 3)
			return
		}
		f.Set(reflect.Zero(f.Type()))
		fill(r, f, 3)
		return
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
		if got, err := m.enc.encode(m); err == nil {
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
