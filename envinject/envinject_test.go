package envinject

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/policy"
)

// keysOnce fails if a key appears twice in env.
func keysOnce(t *testing.T, env []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("key %q appears twice in %q", k, env)
		}
		seen[k] = true
	}
}

func TestChildCompact(t *testing.T) { // DESIGN.md «Auto-compact off», as it reaches the child
	const dac = DisableAutoCompact
	tests := []struct {
		name       string
		base       []string
		spec       policy.CompactMode
		handoff    bool
		wantDAC    string // "" = absent
		wantInject bool   // DISABLE_AUTO_COMPACT in Injected
		notice     string // substring of Notice; "" = Notice empty
	}{
		{name: "handoff, unset", spec: policy.CompactUnset, handoff: true, wantDAC: "1", wantInject: true},
		{name: "handoff, unset, overrides inherited 0", base: []string{dac + "=0"}, spec: policy.CompactUnset, handoff: true, wantDAC: "1", wantInject: true},
		{name: "explicit no_summary, handoff", spec: policy.CompactNoSummary, handoff: true, wantDAC: "1", wantInject: true},
		{name: "explicit no_summary, no handoff", spec: policy.CompactNoSummary, handoff: false, wantDAC: "1", wantInject: true},
		{name: "auto with handoff", spec: policy.CompactAuto, handoff: true, notice: "auto-compact stays on"},
		{name: "auto with handoff removes inherited 1", base: []string{dac + "=1"}, spec: policy.CompactAuto, handoff: true, notice: "explicitly"},
		{name: "auto without handoff", base: []string{dac + "=1"}, spec: policy.CompactAuto, handoff: false},
		{name: "no handoff, nothing inherited", spec: policy.CompactUnset, handoff: false},
		{name: "no handoff, user's own value kept, made visible", base: []string{dac + "=1"}, spec: policy.CompactUnset, handoff: false, wantDAC: "1", notice: "keeps the harness's auto-compact off"},
		{name: "no handoff, user's 0 kept quietly", base: []string{dac + "=0"}, spec: policy.CompactUnset, handoff: false, wantDAC: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := append([]string{"PATH=/bin", "HOME=/h"}, tt.base...)
			p := Child(base, tt.spec, tt.handoff, nil)
			keysOnce(t, p.Env)
			got, ok := Lookup(p.Env, dac)
			if tt.wantDAC == "" && ok {
				t.Errorf("%s=%q in env, want it absent", dac, got)
			}
			if tt.wantDAC != "" && got != tt.wantDAC {
				t.Errorf("%s=%q (present %v), want %q", dac, got, ok, tt.wantDAC)
			}
			if _, inj := p.Injected[dac]; inj != tt.wantInject {
				t.Errorf("Injected has %s: %v, want %v", dac, inj, tt.wantInject)
			}
			if tt.notice == "" && p.Notice != "" {
				t.Errorf("Notice = %q, want none", p.Notice)
			}
			if tt.notice != "" && !strings.Contains(p.Notice, tt.notice) {
				t.Errorf("Notice = %q, want one containing %q", p.Notice, tt.notice)
			}
			if v, _ := Lookup(p.Env, "PATH"); v != "/bin" {
				t.Errorf("PATH = %q, inherited value lost", v)
			}
		})
	}
}

func TestChildPrecedence(t *testing.T) {
	base := []string{
		"A=1", "B=base", "A=2", "NOEQUALS", "C=keep",
		"DISABLE_AUTO_COMPACT=0", "ANTHROPIC_BASE_URL=https://inherited",
	}
	extra := map[string]string{
		"B":                    "extra",
		"ANTHROPIC_BASE_URL":   "http://127.0.0.1:9",
		"DISABLE_AUTO_COMPACT": "0", // compact mode owns this key
		"":                     "dropped",
		"BAD=KEY":              "dropped",
	}
	p := Child(base, policy.CompactUnset, true, extra)
	keysOnce(t, p.Env)

	want := []string{
		"A=2", // last inherited wins, at its first place
		"B=extra",
		"C=keep",
		"DISABLE_AUTO_COMPACT=1",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9",
		"DISABLE_AUTOUPDATER=1",
	}
	if !slices.Equal(p.Env, want) {
		t.Errorf("Env = %q\nwant  %q", p.Env, want)
	}
	wantInjected := map[string]string{"B": "extra", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "DISABLE_AUTO_COMPACT": "1", "DISABLE_AUTOUPDATER": "1"}
	if !maps.Equal(p.Injected, wantInjected) {
		t.Errorf("Injected = %v, want %v", p.Injected, wantInjected)
	}
	if base[2] != "A=2" || len(base) != 7 {
		t.Errorf("base was modified: %q", base)
	}
}

func TestChildExtraDisableAutoCompactWithoutHandoff(t *testing.T) {
	// With no compact mode in effect, a caller's explicit extra is honoured.
	p := Child(nil, policy.CompactUnset, false, map[string]string{DisableAutoCompact: "1"})
	if v, _ := Lookup(p.Env, DisableAutoCompact); v != "1" || p.Injected[DisableAutoCompact] != "1" {
		t.Errorf("env %q, injected %v: caller's extra lost", p.Env, p.Injected)
	}
	// With explicit auto, the compact mode wins over extra.
	p = Child(nil, policy.CompactAuto, true, map[string]string{DisableAutoCompact: "1"})
	if _, ok := Lookup(p.Env, DisableAutoCompact); ok {
		t.Errorf("env %q: auto must not carry %s", p.Env, DisableAutoCompact)
	}
	if _, ok := p.Injected[DisableAutoCompact]; ok {
		t.Errorf("Injected %v lists %s that is not in env", p.Injected, DisableAutoCompact)
	}
}

func TestLookup(t *testing.T) {
	env := []string{"A=1", "B=", "A=2", "C", "D=x=y"}
	tests := []struct {
		key    string
		want   string
		wantOK bool
	}{
		{"A", "2", true},
		{"B", "", true},
		{"C", "", false},
		{"D", "x=y", true},
		{"E", "", false},
	}
	for _, tt := range tests {
		got, ok := Lookup(env, tt.key)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"absent", []string{"X=1"}, []string{"X=1", "K=v"}},
		{"present once", []string{"K=old", "X=1"}, []string{"K=v", "X=1"}},
		{"present twice", []string{"K=a", "X=1", "K=b"}, []string{"K=v", "X=1"}},
		{"prefix is another key", []string{"KK=1", "K2=2"}, []string{"KK=1", "K2=2", "K=v"}},
		{"nil", nil, []string{"K=v"}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.env)
		got := Set(tt.env, "K", "v")
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Set = %q, want %q", tt.name, got, tt.want)
		}
		if !slices.Equal(tt.env, in) {
			t.Errorf("%s: input changed to %q", tt.name, tt.env)
		}
	}
}

// TestChildHoldsTheHarness: every child, in every compact mode, is started
// with the harness's self-update off, over an inherited 0; with compaction
// held off, the switches of its other compactions are taken out, and with
// compaction asked for they are left as the person set them.
func TestChildHoldsTheHarness(t *testing.T) {
	base := []string{"DISABLE_AUTOUPDATER=0", "CLAUDE_CODE_SLEEP_COMPACT=1", "CLAUDE_CODE_SLEEP_COMPACT_AFTER_MS=1000",
		"CLAUDE_CODE_COLD_COMPACT=1", "CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS=1", "KEEP=1"}
	for _, tt := range []struct {
		mode    policy.CompactMode
		handoff bool
		held    bool
	}{
		{policy.CompactUnset, true, true},
		{policy.CompactNoSummary, false, true},
		{policy.CompactAuto, true, false},
		{policy.CompactUnset, false, false},
	} {
		p := Child(base, tt.mode, tt.handoff, nil)
		keysOnce(t, p.Env)
		if v, _ := Lookup(p.Env, "DISABLE_AUTOUPDATER"); v != "1" {
			t.Errorf("%q handoff=%v: DISABLE_AUTOUPDATER=%q, want 1", tt.mode, tt.handoff, v)
		}
		if v, _ := Lookup(p.Env, "KEEP"); v != "1" {
			t.Errorf("%q handoff=%v: an unrelated variable was lost", tt.mode, tt.handoff)
		}
		for _, k := range OtherCompaction {
			_, there := Lookup(p.Env, k)
			if there == tt.held {
				t.Errorf("%q handoff=%v: %s there=%v, want %v", tt.mode, tt.handoff, k, there, !tt.held)
			}
		}
	}
}
