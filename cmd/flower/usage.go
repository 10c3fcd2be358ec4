package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// One shape for every usage error (the README's "Exit codes"): one line, exit 2,
// whether the flag belongs to flower or to one of its commands; help is
// asked for, never printed unasked.

// oneShapeOfUsageError gives every command, and every subcommand, flower's
// handling of a bad flag and of a missing required one: a line naming the
// command's help, in place of urfave/cli's whole help text.
func oneShapeOfUsageError(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		cmd.OnUsageError = flagError
		requireFlags(cmd)
		oneShapeOfUsageError(cmd.Subcommands)
	}
	return cmds
}

// requireFlags checks cmd's required flags itself: urfave/cli prints the
// whole help for a missing one.
func requireFlags(cmd *cli.Command) {
	var required []string
	for _, f := range cmd.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
			sf.Required = false
			required = append(required, sf.Name)
		}
	}
	if len(required) == 0 || cmd.Action == nil {
		return
	}
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		for _, name := range required {
			if !c.IsSet(name) {
				return usagef("%s needs --%s (see %s --help)", c.Command.HelpName, name, c.Command.HelpName)
			}
		}
		return action(c)
	}
}

// aliased gives cmd more names.
func aliased(cmd *cli.Command, names ...string) *cli.Command {
	cmd.Aliases = append(cmd.Aliases, names...)
	return cmd
}

// helpTopicError makes urfave/cli's answer to `flower help NOSUCH` (an
// exit code of its own) a usage error.
func helpTopicError(err error) error {
	var ec cli.ExitCoder
	if errors.As(err, &ec) && strings.HasPrefix(err.Error(), "No help topic for ") {
		return usagef("%s: flower help lists the commands", strings.TrimPrefix(err.Error(), "No help topic for "))
	}
	return err
}

// unknownFlag is how flag parsing words a flag it does not know.
var unknownFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)

// badValue is how flag parsing words a value a flag cannot take.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([\w-]+): (.*)$`)

// badEnv is how flag parsing words a variable's value a flag cannot take:
// a duration's, then any other's.
var badEnv = []*regexp.Regexp{
	regexp.MustCompile(`^could not parse "(.*)" as duration value from environment variable "(\w+)" for flag [\w-]+: (.*)$`),
	regexp.MustCompile(`^could not parse "(.*)" from environment variable "(\w+)" as value for flag [\w-]+: (.*)$`),
}

// flagError is the usage error of a flag flower or a command could not
// parse: one line, the command's help named, a duration's units said.
func flagError(c *cli.Context, err error, _ bool) error {
	where := "flower"
	if c.Command != nil && c.Command.Name != "" && c.Command.HelpName != "" {
		where = c.Command.HelpName
	}
	if m := badValue.FindStringSubmatch(err.Error()); m != nil {
		return usageError{valueError(c, m[2], m[1], m[3], where)}
	}
	for i, re := range badEnv {
		if m := re.FindStringSubmatch(err.Error()); m != nil {
			return usageError{envError(m[2], m[1], m[3], i == 0)}
		}
	}
	if m := unknownFlag.FindStringSubmatch(err.Error()); m != nil {
		dash := "--" // a name of one letter is a short flag, typed -x
		if utf8.RuneCountInString(m[1]) == 1 {
			dash = "-"
		}
		return usagef("unknown flag %s%s (see %s --help)", dash, m[1], where)
	}
	return usagef("%v (see %s --help)", err, where)
}

// valueError words a value flag name could not take.
func valueError(c *cli.Context, name, value, why, where string) error {
	if isDurationFlag(c, name) {
		if strings.Trim(value, "0123456789.") == "" {
			return fmt.Errorf("--%s %s needs a unit, e.g. %sh or 30m", name, value, value)
		}
		return fmt.Errorf("--%s %q is not a duration: say it with its unit, e.g. 8h, 30m or 90s", name, value)
	}
	return fmt.Errorf("--%s %q: %s (see %s --help)", name, value, why, where)
}

// envError words a variable's value a flag could not take.
func envError(name, value, why string, duration bool) error {
	switch {
	case duration && strings.Trim(value, "0123456789.") == "":
		return fmt.Errorf("%s=%s needs a unit, e.g. %sh or 30m", name, value, value)
	case duration:
		return fmt.Errorf("%s=%q is not a duration: say it with its unit, e.g. 8h, 30m or 90s", name, value)
	}
	return fmt.Errorf("%s=%q: %s", name, value, why)
}

// isDurationFlag reports whether the command in c has a duration flag name.
func isDurationFlag(c *cli.Context, name string) bool {
	var flags []cli.Flag
	if c.Command != nil {
		flags = c.Command.Flags
	}
	if c.Command == nil || c.Command.Name == "" {
		flags = c.App.Flags
	}
	for _, f := range flags {
		if df, ok := f.(*cli.DurationFlag); ok && slices.Contains(df.Names(), name) {
			return true
		}
	}
	return false
}
