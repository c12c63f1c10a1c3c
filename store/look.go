package store

import "slices"

// Names returns the names in the directory at rel, a path inside the run,
// sorted; none when it does not exist. A symbolic link on the way is
// refused, as every path of the run's tree is.
func (r *Run) Names(rel string) ([]string, error) {
	names, err := r.tree.names(rel)
	if err != nil {
		return nil, r.readError(rel, err)
	}
	slices.Sort(names)
	return names, nil
}
