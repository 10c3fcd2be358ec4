package logfollow

import "golang.org/x/sys/unix"

// Notified reports whether fsnotify tells of every change made in dir on
// this machine, so that no slow look is needed beside it: a local file
// system (ext4, xfs, btrfs, tmpfs, overlay, …). A network or userspace one
// (NFS, SMB, FUSE, 9p, Ceph, AFS, a VM's shared folder) may send nothing
// for a change, and keeps the look; so does a folder that cannot be asked.
func Notified(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC,
		unix.FUSE_SUPER_MAGIC, unix.V9FS_MAGIC, unix.CEPH_SUPER_MAGIC, unix.AFS_SUPER_MAGIC,
		unix.AFS_FS_MAGIC, unix.CODA_SUPER_MAGIC, unix.NCP_SUPER_MAGIC, vboxsfMagic:
		return false
	}
	return true
}

// vboxsfMagic is VirtualBox's shared folders (not in x/sys/unix).
const vboxsfMagic = 0x786f4256
