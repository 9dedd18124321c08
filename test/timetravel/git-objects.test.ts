import t from 'tap';
import { objectId } from '../../src/features/timetravel/object-store.js';
import { treeObject } from '../../src/features/timetravel/scan.js';

/**
 * Checkpoints are git objects written without git (docs/time-travel.md): their ids must be the ones
 * git computes, or a store would not read back with git. The expected ids are git's own
 * (`git hash-object`, `git write-tree` of the same files).
 */

t.test('objectId: blob ids as git gives them', async (t) => {
  t.equal(objectId('blob', Buffer.from('hello\n')), 'ce013625030ba8dba906f756967f9e9ca394464a');
  t.equal(objectId('blob', new Uint8Array()), 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391', 'the empty blob');
  t.equal(objectId('tree', new Uint8Array()), '4b825dc642cb6eb9a060e54bf8d69288fbee4904', 'the empty tree');
});

t.test("treeObject: git's entry order (a folder sorts as if its name ended in /), git's tree ids", async (t) => {
  const folder = treeObject([{ name: 'f', mode: '100644', id: objectId('blob', Buffer.from('x')) }]);
  t.equal(objectId('tree', folder), '2561a62d4223eb7660d3b6b02b707048382f4019');
  const root = treeObject([
    { name: 'hello.txt', mode: '100644', id: 'ce013625030ba8dba906f756967f9e9ca394464a' },
    { name: 'a', mode: '40000', id: objectId('tree', folder) },
    { name: 'a.txt', mode: '100644', id: objectId('blob', Buffer.from('y')) },
    { name: 'a-b', mode: '100644', id: objectId('blob', new Uint8Array()) },
  ]);
  const names = root
    .toString('latin1')
    .split('\0')
    .slice(0, 4)
    .map((s) => s.slice(s.lastIndexOf(' ') + 1));
  t.same(names, ['a-b', 'a.txt', 'a', 'hello.txt'], "'a' after 'a.txt': compared as 'a/'");
  t.equal(objectId('tree', root), '36a6d223e3e0521a5ed87de6e0a1b1a07f89b1b1', 'the id git write-tree gives these files');
});
