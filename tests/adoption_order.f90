! adoption_order.f90 - a netcdf-fortran writer of test_adoption_order.sh
! (issue 39) that never calls nf90_enddef: netCDF ends the definition at
! the first nf90_put_var. Under the shim with a mask both fields must be
! stored by region. Values: field k at (x, y, t) (Fortran order) is
! k * 100000 + (t - 1) * 10000 + (y - 1) * 100 + (x - 1).
! usage: adoption_order OUT.nc
program adoption_order
  use netcdf
  implicit none
  integer, parameter :: nx = 70, ny = 60, nt = 2
  integer :: ncid, dt, dy, dx, va, vb, x, y, t
  real :: a(nx, ny, nt), b(nx, ny, nt)
  character(len=4096) :: path

  call get_command_argument(1, path)
  do t = 1, nt
    do y = 1, ny
      do x = 1, nx
        a(x, y, t) = real((t - 1) * 10000 + (y - 1) * 100 + (x - 1))
        b(x, y, t) = a(x, y, t) + 100000.0
      end do
    end do
  end do
  call check(nf90_create(trim(path), ior(NF90_NETCDF4, NF90_CLOBBER), ncid))
  call check(nf90_def_dim(ncid, "time", NF90_UNLIMITED, dt))
  call check(nf90_def_dim(ncid, "y", ny, dy))
  call check(nf90_def_dim(ncid, "x", nx, dx))
  call check(nf90_def_var(ncid, "A", NF90_REAL, (/ dx, dy, dt /), va))
  call check(nf90_def_var(ncid, "B", NF90_REAL, (/ dx, dy, dt /), vb, &
                          deflate_level=1))
  call check(nf90_put_att(ncid, vb, "units", "K"))
  call check(nf90_put_var(ncid, vb, b))
  call check(nf90_put_var(ncid, va, a))
  call check(nf90_close(ncid))
contains
  subroutine check(status)
    integer, intent(in) :: status
    if (status /= NF90_NOERR) then
      write (0, *) "adoption_order: ", trim(nf90_strerror(status))
      stop 1
    end if
  end subroutine check
end program adoption_order
