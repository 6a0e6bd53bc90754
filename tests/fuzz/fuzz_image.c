/* What a Mac says about a VM's image: `lume config storage list` output, FUZZ_RS, a VM name,
 * FUZZ_RS, a .manifest-digest file. image_storage_parse; for each location found and the default
 * one, image_storage_find and image_digest_path with that name (image_vm_name_ok first);
 * image_digest_parse of the digest. */
#include "fuzz.h"
#include "core/image.h"
#include "core/util.h"

FUZZ_TARGET(image)
{
	image_location locs[IMAGE_LOCATIONS_MAX];
	char err[LM_ERRLEN], path[4096], digest[IMAGE_DIGEST_LEN + 1], *storage, *vm, *file;
	const uint8_t *p;
	size_t n = 0, len = 0, vlen = 0, flen = 0;

	p = fuzz_part(data, size, 0, &len);
	storage = fuzz_str(p, len);
	p = fuzz_part(data, size, 1, &vlen);
	vm = p ? fuzz_str(p, vlen) : fuzz_str((const uint8_t *)"tahoe-1", 7);
	p = fuzz_part(data, size, 2, &flen);
	file = fuzz_str(p, flen);
	if (fuzz_note("image_storage_parse", image_storage_parse(locs, IMAGE_LOCATIONS_MAX, &n, storage, len, err),
	    err) == LM_OK) {
		const image_location *def = image_storage_find(locs, n, NULL);

		for (size_t i = 0; i <= n; i++) {
			const image_location *l = i < n ? image_storage_find(locs, n, locs[i].name) : def;

			if (l != NULL && image_vm_name_ok(vm))
				fuzz_note("image_digest_path", image_digest_path(path, sizeof path, l->path, "/Users/lume", vm,
				    err), err);
		}
	}
	fuzz_note("image_digest_parse", image_digest_parse(digest, file, flen, err), err);
	free(storage);
	free(vm);
	free(file);
	return 0;
}
