package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// settingsWith parses args with the run flags under env, as flower run
// does, and gives the settings or the refusal.
func settingsWith(t *testing.T, env map[string]string, args ...string) (jobSettings, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var set jobSettings
	app := &cli.App{Name: "flower", Flags: runFlags(),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return usageError{err} },
		Action: func(c *cli.Context) (err error) {
			set, err = settingsFrom(c, proc{})
			return err
		}}
	err := app.Run(append([]string{"flower"}, args...))
	return set, err
}

// The FLOWER_* variables that are a flag's set the flag when it is not
// given (the flag wins), under the flag's range, and a refusal names the
// variable.
func TestRunSettingsFromTheEnvironment(t *testing.T) {
	t.Run("from the environment", func(t *testing.T) {
		set, err := settingsWith(t, map[string]string{"FLOWER_WINDOW": "200000", "FLOWER_HEADROOM": "5000", "FLOWER_MAX_GENERATIONS": "4"}, "x")
		if err != nil {
			t.Fatal(err)
		}
		if h := set.handoff; h.Window != 200000 || h.Headroom != 5000 || h.MaxGenerations != 4 {
			t.Errorf("%+v", h)
		}
	})
	t.Run("the flag wins", func(t *testing.T) {
		set, err := settingsWith(t, map[string]string{"FLOWER_WINDOW": "200000"}, "--window", "300000", "x")
		if err != nil || set.handoff.Window != 300000 {
			t.Errorf("window %d, %v", set.handoff.Window, err)
		}
	})
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"FLOWER_WINDOW": "0"}, nil, "FLOWER_WINDOW must be at least 1, got 0"},
		{map[string]string{"FLOWER_HEADROOM": "-3"}, nil, "FLOWER_HEADROOM must be at least 1, got -3"},
		{map[string]string{"FLOWER_MAX_GENERATIONS": "lots"}, nil, "FLOWER_MAX_GENERATIONS"},
		{map[string]string{"FLOWER_WINDOW": "0"}, []string{"--window", "-2"}, "--window must be at least 1, got -2"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			_, err := settingsWith(t, tt.env, append(tt.args, "x")...)
			if exitCode(err) != exitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v %v: %v, want a usage error containing %q", tt.env, tt.args, err, tt.want)
			}
		})
	}
}
