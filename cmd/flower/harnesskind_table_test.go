package main

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestHarnessKindsComplete: every kind flower names has all a command asks
// of it, is listed once in kindNames, and is known by its binary's name
// (a run, doctor and version read each of these, so a kind added without
// one would fail late, not here).
func TestHarnessKindsComplete(t *testing.T) {
	if len(kindNames) != len(harnessKinds) {
		t.Fatalf("kindNames %q, but %d kinds", kindNames, len(harnessKinds))
	}
	for _, k := range kindNames {
		i, ok := harnessKinds[k]
		if !ok {
			t.Fatalf("%s is in kindNames but not in harnessKinds", k)
		}
		v := reflect.ValueOf(i)
		for n := range v.NumField() {
			// screen and demoScreen may be left out (no -i, no demo -i);
			// every other field is something a command calls or says.
			if f := v.Type().Field(n); f.Name != "screen" && f.Name != "demoScreen" && v.Field(n).IsZero() {
				t.Errorf("%s: its entry has no %s", k, f.Name)
			}
		}
		if got, _, ok := knownKind(context.Background(), filepath.Join(t.TempDir(), i.binary)); !ok || got != k {
			t.Errorf("a binary named %s is %q (%v), want %s", i.binary, got, ok, k)
		}
		if got, err := parseHarnessKind(" " + string(k) + " "); err != nil || got != k {
			t.Errorf("parseHarnessKind(%s) = %q, %v", k, got, err)
		}
	}
	if _, err := parseHarnessKind("aider"); err == nil {
		t.Errorf("an unknown kind was taken")
	}
}
