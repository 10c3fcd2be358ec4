package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
)

// The manifest is written on every decision of a step (DESIGN.md
// «Manifest»), and a long step's holds hundreds of generations, of which
// a decision changes one or two. So a save encodes by encoding/json what
// changed since the last save and reuses the bytes of the rest: each
// generation's encoding is kept with a deep copy of the generation it
// encodes, and reused while the generation is reflect.DeepEqual to that
// copy. A change made anywhere (a field, the handoff record through its
// pointer, a list) is a difference, so the bytes are encoding/json's
// Marshal of the manifest (TestCachedIsEncodingJSON), with no list of
// fields to keep in step with the types.

// encoder is what a manifest's saves keep from one to the next.
type encoder struct {
	buf []byte
	// gens are the generations' encodings, by step, in order.
	gens map[*StepResult][]encoded
}

type encoded struct {
	g    Generation // a deep copy of what b encodes
	json []byte
}

// plainStep and plainManifest drop the types' own MarshalJSON.
type (
	plainStep     StepResult
	plainManifest Manifest
)

// encode is m as Save writes it (compact, a newline at the end), in e's
// buffer: valid until e's next encode. Each step is normalized here.
func (e *encoder) encode(m *Manifest) ([]byte, error) {
	head := plainManifest{Version: m.Version, RunDir: m.RunDir, Workspace: m.Workspace,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, HarnessKind: m.HarnessKind, Probe: m.Probe}
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	if m.Steps == nil {
		e.buf = append(append(e.buf[:0], b...), '\n')
		return e.buf, nil
	}
	b, err = openLast(b, "steps")
	if err != nil {
		return nil, err
	}
	e.buf = append(e.buf[:0], b...)
	live := make(map[*StepResult][]encoded, len(m.Steps))
	for i, s := range m.Steps {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if s == nil {
			e.buf = append(e.buf, "null"...)
			continue
		}
		if live[s], err = e.step(s); err != nil {
			return nil, err
		}
	}
	e.gens = live // a step no longer in m is forgotten
	e.buf = append(e.buf, "]}\n"...)
	return e.buf, nil
}

// step appends s, normalized, to e.buf and returns the encodings of its
// generations for the next save.
func (e *encoder) step(s *StepResult) ([]encoded, error) {
	s.normalize()
	head := plainStep(*s)
	head.Generations = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	if b, err = openLast(b, "generations"); err != nil {
		return nil, err
	}
	e.buf = append(e.buf, b...)
	kept := e.gens[s]
	out := make([]encoded, len(s.Generations))
	for i := range s.Generations {
		g := &s.Generations[i]
		if i < len(kept) && reflect.DeepEqual(g, &kept[i].g) {
			out[i] = kept[i]
		} else {
			b, err := json.Marshal(g)
			if err != nil {
				return nil, err
			}
			out[i] = encoded{g: clone(g), json: b}
		}
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(e.buf, out[i].json...)
	}
	e.buf = append(e.buf, ']', '}')
	return out, nil
}

// openLast turns an object whose last member is `"key":null` into its
// bytes up to that member's list opened: `…,"key":[`.
func openLast(b []byte, key string) ([]byte, error) {
	tail := `"` + key + `":null}`
	if !bytes.HasSuffix(b, []byte(tail)) {
		return nil, errors.New("encode manifest: " + key + " is not the last member")
	}
	return append(b[:len(b)-len("null}")], '['), nil
}

// clone is a deep copy of *v: it shares no pointer, slice or map with it,
// so that a later change of v through any of them is a difference to
// reflect.DeepEqual. Values behind unexported fields (a time's location)
// are shared: they do not change.
func clone[T any](v *T) T {
	var out T
	deepCopy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(v).Elem())
	return out
}

func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			deepCopy(dst.Elem(), src.Elem())
		}
	case reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := range src.Len() {
				deepCopy(dst.Index(i), src.Index(i))
			}
		}
	case reflect.Map:
		if !src.IsNil() {
			dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
			for it := src.MapRange(); it.Next(); {
				v := reflect.New(src.Type().Elem()).Elem()
				deepCopy(v, it.Value())
				dst.SetMapIndex(it.Key(), v)
			}
		}
	case reflect.Struct:
		dst.Set(src)
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Interface:
		if !src.IsNil() {
			v := reflect.New(src.Elem().Type()).Elem()
			deepCopy(v, src.Elem())
			dst.Set(v)
		}
	default:
		dst.Set(src)
	}
}
