package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// sizeFlag is a whole-number flag that takes sizes as flower prints them:
// 200000, 200K or 200k, 1M, 1.5M (K a thousand, M a million). Its value
// reads back as a plain number, so c.Int reads it like an IntFlag's.
func sizeFlag(name string, envVars []string, value int, usage, defaultText string) *cli.GenericFlag {
	v := sizeValue(value)
	return &cli.GenericFlag{Name: name, EnvVars: envVars, Value: &v, Usage: usage, DefaultText: defaultText}
}

// sizeValue is a sizeFlag's value.
type sizeValue int

func (v *sizeValue) String() string { return strconv.Itoa(int(*v)) }

func (v *sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}

// parseSize reads a size: a whole number, or a number followed by K or M.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "m"), strings.HasSuffix(t, "M"):
		mult, t = 1e6, t[:len(t)-1]
	}
	if mult == 1 {
		if n, err := strconv.Atoi(t); err == nil {
			return n, nil
		}
	} else if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f*mult) < math.MaxInt32 {
		if n := f * mult; n == math.Trunc(n) {
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("want a whole number such as 200000, 200K or 1M")
}
