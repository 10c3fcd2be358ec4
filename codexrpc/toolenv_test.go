package codexrpc

import (
	"reflect"
	"testing"
)

// The person's exclude list is kept in its order, each key is added once,
// and an empty name (a provider with no env_key) adds nothing.
func TestToolEnvOverride(t *testing.T) {
	got := ToolEnvOverride([]string{"MY_*", "OPENAI_API_KEY"}, []string{"OPENAI_API_KEY", "", "SCRIPTED_API_KEY", "SCRIPTED_API_KEY"})
	want := map[string]any{"shell_environment_policy.exclude": []string{"MY_*", "OPENAI_API_KEY", "SCRIPTED_API_KEY"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := ToolEnvOverride(nil, nil); !reflect.DeepEqual(got, map[string]any{"shell_environment_policy.exclude": []string{}}) {
		t.Errorf("nothing to leave out: %v", got)
	}
}
