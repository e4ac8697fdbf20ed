"""Reads a .vtu file with the VTK library itself and prints what it holds, for the Rust test
`vtu_files_read_back_with_the_vtk_library` (tests/vtu.rs) to compare with what it wrote.

Usage: python vtu_readback.py FILE.vtu

Prints one record a line, fields separated by spaces, floats as Python's repr (which reads back
to the same double):
    points N
    cells N
    point X Y Z                                 (one per point)
    cell TYPE ID ID ...                         (one per cell: VTK cell type, point ids)
    array point|cell NAME TYPE COMPONENTS V ...  (one per array: VTK's type name with _ for
                                                 spaces, the tuples' values)
Exits non-zero, saying why on stderr, where VTK reports an error reading the file.
"""
import sys

from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonCore import vtkCommand, vtkIdList
from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridReader

path = sys.argv[1]
errors = []
reader = vtkXMLUnstructuredGridReader()
# VTK reports a bad file as an error event and still returns what it could read.
reader.AddObserver(vtkCommand.ErrorEvent, lambda _obj, _event: errors.append(path))
reader.SetFileName(path)
reader.Update()
if errors or reader.GetErrorCode():
    print(f"vtu read-back FAILED: VTK reports an error reading {path}", file=sys.stderr)
    sys.exit(1)
grid = reader.GetOutput()


def floats(values):
    return " ".join(repr(float(v)) for v in values)


out = [f"points {grid.GetNumberOfPoints()}", f"cells {grid.GetNumberOfCells()}"]
points = grid.GetPoints()
if grid.GetNumberOfPoints():
    out += [f"point {floats(p)}" for p in vtk_to_numpy(points.GetData())]
ids = vtkIdList()
for c in range(grid.GetNumberOfCells()):
    grid.GetCellPoints(c, ids)
    nodes = " ".join(str(ids.GetId(i)) for i in range(ids.GetNumberOfIds()))
    out.append(f"cell {grid.GetCellType(c)} {nodes}")
for where, data in [("point", grid.GetPointData()), ("cell", grid.GetCellData())]:
    for a in range(data.GetNumberOfArrays()):
        array = data.GetAbstractArray(a)
        values = vtk_to_numpy(array).ravel()
        floating = array.GetDataTypeAsString() in ("double", "float")
        text = floats(values) if floating else " ".join(str(int(v)) for v in values)
        # One word: "unsigned int" becomes "unsigned_int".
        kind = array.GetDataTypeAsString().replace(" ", "_")
        out.append(f"array {where} {array.GetName()} {kind} {array.GetNumberOfComponents()} {text}")
print("\n".join(out))
