import csv
import sys
from collections import Counter


def kind(values):
    try:
        [float(v) for v in values]
        return 'number'
    except ValueError:
        return 'text'


def main(path):
    with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
    print(f'rows: {len(rows)}')
    if not rows:
        return
    for col in rows[0].keys():
        values = [r[col] for r in rows if r[col] not in ('', None)]
        missing = len(rows) - len(values)
        k = kind(values) if values else 'empty'
        if k == 'number':
            nums = [float(v) for v in values]
            extra = f'min {min(nums)} max {max(nums)}'
        else:
            extra = 'top ' + ', '.join(f'{v} ({n})' for v, n in Counter(values).most_common(3))
        print(f'{col}: {k}, missing {missing}, {extra}')


if __name__ == '__main__':
    main(sys.argv[1])
