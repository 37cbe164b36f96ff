/**
 * Files the config names for a credential (a key file, a token file, a service-account key):
 * read at every (re)load, at most MAX_CREDENTIAL_FILE_BYTES of each. Their errors say neither
 * the path (the field may hold a key pasted into the wrong place) nor anything of the contents.
 */

/**
 * The largest credential file read: a service-account JSON key is ~2.4 KB, a key file a few
 * lines. A path pointing at a log, a disk image or `/dev/zero` is refused without reading on.
 */
export const MAX_CREDENTIAL_FILE_BYTES = 1024 * 1024;

/** Why a credential file cannot be used, said without its path or contents. */
export class CredentialFileError extends Error {
  override name = "CredentialFileError";
}

/** The text of the credential file at `path`, or a CredentialFileError saying why not. */
export function readCredentialFile(path: string): string {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path);
  } catch (e) {
    throw unreadable(e);
  }
  try {
    // One byte over the bound tells a file that is over it, however large (or endless) it is.
    const bytes = new Uint8Array(MAX_CREDENTIAL_FILE_BYTES + 1);
    let size = 0;
    while (size < bytes.length) {
      const n = file.readSync(bytes.subarray(size));
      if (n === null) break;
      size += n;
    }
    if (size > MAX_CREDENTIAL_FILE_BYTES) {
      throw new CredentialFileError(
        `the file is larger than ${MAX_CREDENTIAL_FILE_BYTES} bytes (1 MiB), the limit for a ` +
          "credential file",
      );
    }
    return new TextDecoder().decode(bytes.subarray(0, size));
  } catch (e) {
    throw e instanceof CredentialFileError ? e : unreadable(e);
  } finally {
    file.close();
  }
}

/** The error's kind (`NotFound`, `PermissionDenied`, `IsADirectory`), never its message. */
const unreadable = (e: unknown) =>
  new CredentialFileError(`cannot read the file (${e instanceof Error ? e.name : "error"})`);
