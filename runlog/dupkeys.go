package runlog

import (
	"bytes"
	"encoding/json"
)

// DuplicateKeys lists the keys a JSON record repeats, as path.key, in the
// order met; nothing for a line that is not JSON. Every record the handler
// writes has each key once; tests of the log hold it to that.
func DuplicateKeys(line []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(line))
	var dups []string
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					dups = append(dups, path+key)
				}
				seen[key] = true
				if err := walk(path + key + "."); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(path); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if walk("") != nil {
		return nil
	}
	return dups
}
